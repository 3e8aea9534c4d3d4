package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/harnessd/harnessd/gateway/dialect"
)

// Route kinds.
const (
	routeGenerate = iota
	routeCountTokens
	routeModels
	routeUnknown
)

// ServeHTTP implements http.Handler: the agent-facing endpoint.
//
// Routes match on the path's suffix, so any base-URL prefix works:
// .../chat/completions (OpenAI Chat Completions), .../responses (OpenAI
// Responses), .../messages and .../messages/count_tokens (Anthropic
// Messages), .../models/MODEL:generateContent, :streamGenerateContent and
// :countTokens (Gemini; the method case-insensitively) and GET .../models
// (a listing of the upstream's model); a POST to another path is taken by
// its body's shape. HEAD or GET / answers a connectivity
// probe without a key. Everything else needs the episode's key.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
		return
	}
	name, kind := route(r)
	d := dialect.New(name)
	if !g.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="harnessd-gateway"`)
		d.WriteError(w, failure{Status: http.StatusUnauthorized, Kind: failAuth, Message: "gateway: invalid or missing API key"})
		return
	}
	if kind == routeModels {
		if r.Method != http.MethodGet {
			d.WriteError(w, failure{Status: http.StatusMethodNotAllowed, Kind: failMethod, Message: "gateway: method " + r.Method + " not allowed"})
			return
		}
		g.models(w, d)
		return
	}
	if r.Method != http.MethodPost {
		f := failure{Status: http.StatusMethodNotAllowed, Kind: failMethod, Message: "gateway: method " + r.Method + " not allowed on " + r.URL.Path}
		if kind == routeUnknown {
			f = failure{Status: http.StatusNotFound, Kind: failNotFound, Message: "gateway: no route for " + r.Method + " " + r.URL.Path}
		}
		d.WriteError(w, f)
		return
	}
	body, f := g.readBody(w, r)
	if f != nil {
		d.WriteError(w, *f)
		return
	}
	switch kind {
	case routeUnknown:
		shaped, ok := detectShape(r, body)
		if !ok {
			d.WriteError(w, failure{Status: http.StatusNotFound, Kind: failNotFound, Message: "gateway: no route for POST " + r.URL.Path})
			return
		}
		d = dialect.New(shaped)
	case routeCountTokens:
		g.countTokens(w, d, body)
		return
	}
	g.generate(w, r, d, body)
}

// route picks the dialect and kind of a request by its path; an unknown
// path gets the dialect its headers suggest, for the error shape.
func route(r *http.Request) (Dialect, int) {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		return DialectChat, routeGenerate
	case strings.HasSuffix(p, "/messages/count_tokens"):
		return DialectAnthropic, routeCountTokens
	case strings.HasSuffix(p, "/messages"):
		return DialectAnthropic, routeGenerate
	case strings.HasSuffix(p, "/responses"):
		return DialectResponses, routeGenerate
	}
	if _, method, ok := dialect.GeminiMethod(p); ok {
		if method == "countTokens" {
			return DialectGemini, routeCountTokens
		}
		return DialectGemini, routeGenerate
	}
	switch {
	case strings.HasSuffix(p, "/models") && (strings.Contains(p, "/v1beta/") || r.Header.Get("X-Goog-Api-Key") != ""):
		return DialectGemini, routeModels
	case strings.HasSuffix(p, "/models"):
		return DialectChat, routeModels
	case strings.Contains(p, "/v1beta/") || strings.Contains(p, ":") || r.Header.Get("X-Goog-Api-Key") != "":
		return DialectGemini, routeUnknown
	case r.Header.Get("Anthropic-Version") != "":
		return DialectAnthropic, routeUnknown
	}
	return DialectChat, routeUnknown
}

// detectShape picks the dialect of a generation request on an unknown path
// by its body: Gemini when it has contents, Responses when it has input and
// a field only Responses has,
// Anthropic when it has messages and a top-level system or an
// anthropic-version header, else Chat Completions when it has messages.
func detectShape(r *http.Request, body []byte) (Dialect, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return "", false
	}
	if _, ok := fields["contents"]; ok {
		return DialectGemini, true
	}
	if _, ok := fields["input"]; ok { // an embeddings request has input too, but none of these
		for _, k := range []string{"instructions", "tools", "stream", "max_output_tokens", "reasoning", "store", "previous_response_id"} {
			if _, ok := fields[k]; ok {
				return DialectResponses, true
			}
		}
		return "", false
	}
	if _, ok := fields["messages"]; !ok {
		return "", false
	}
	if _, sys := fields["system"]; sys || r.Header.Get("Anthropic-Version") != "" {
		return DialectAnthropic, true
	}
	return DialectChat, true
}

// readBody reads an agent's request body, bounded.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *failure) {
	max := g.opts.MaxRequestBody
	tooBig := &failure{Status: http.StatusRequestEntityTooLarge, Kind: failTooLarge, Message: fmt.Sprintf("gateway: request body over %d bytes", max)}
	if r.ContentLength > max {
		return nil, tooBig
	}
	if enc := r.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		return nil, &failure{Status: http.StatusUnsupportedMediaType, Kind: failInvalid, Message: "gateway: unsupported Content-Encoding " + enc}
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, tooBig
		}
		return nil, &failure{Status: http.StatusBadRequest, Kind: failInvalid, Message: "gateway: cannot read request body: " + err.Error()}
	}
	return b, nil
}

// countTokens answers a count_tokens request locally with an estimate: it
// is auxiliary traffic, never sent upstream, recorded or counted against a
// budget.
func (g *Gateway) countTokens(w http.ResponseWriter, d dialect.Translator, body []byte) {
	if !json.Valid(body) {
		d.WriteError(w, failure{Status: http.StatusBadRequest, Kind: failInvalid, Message: "gateway: malformed request: not JSON"})
		return
	}
	if d.Name() == DialectGemini {
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": countTokensEstimate(body)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"input_tokens": countTokensEstimate(body)})
}

// countTokensEstimate is a count_tokens answer's estimate: a quarter of
// the request's bytes.
func countTokensEstimate(body []byte) int { return max(1, len(body)/4) }

// models answers a model listing with the upstream's model.
func (g *Gateway) models(w http.ResponseWriter, d dialect.Translator) {
	m := g.opts.Upstream.Model
	if m == "" {
		m = "default"
	}
	if d.Name() == DialectGemini {
		writeJSON(w, http.StatusOK, map[string]any{"models": []any{map[string]any{
			"name": "models/" + m, "displayName": m,
			"supportedGenerationMethods": []string{"generateContent", "streamGenerateContent", "countTokens"}}}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
		map[string]any{"id": m, "object": "model", "created": 0, "owned_by": "harnessd"},
	}})
}
