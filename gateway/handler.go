package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
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
	d, kind := route(r)
	if !g.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="harnessd-gateway"`)
		d.writeError(w, failure{http.StatusUnauthorized, failAuth, "gateway: invalid or missing API key"})
		return
	}
	if kind == routeModels {
		if r.Method != http.MethodGet {
			d.writeError(w, failure{http.StatusMethodNotAllowed, failMethod, "gateway: method " + r.Method + " not allowed"})
			return
		}
		g.models(w, d)
		return
	}
	if r.Method != http.MethodPost {
		f := failure{http.StatusMethodNotAllowed, failMethod, "gateway: method " + r.Method + " not allowed on " + r.URL.Path}
		if kind == routeUnknown {
			f = failure{http.StatusNotFound, failNotFound, "gateway: no route for " + r.Method + " " + r.URL.Path}
		}
		d.writeError(w, f)
		return
	}
	body, f := g.readBody(w, r)
	if f != nil {
		d.writeError(w, *f)
		return
	}
	switch kind {
	case routeUnknown:
		shaped, ok := detectShape(r, body)
		if !ok {
			d.writeError(w, failure{http.StatusNotFound, failNotFound, "gateway: no route for POST " + r.URL.Path})
			return
		}
		d = shaped
	case routeCountTokens:
		g.countTokens(w, d, body)
		return
	}
	g.generate(w, r, d, body)
}

// route picks the dialect and kind of a request by its path; an unknown
// path gets the dialect its headers suggest, for the error shape.
func route(r *http.Request) (*dialect, int) {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		return chatDialect, routeGenerate
	case strings.HasSuffix(p, "/messages/count_tokens"):
		return anthropicDialect, routeCountTokens
	case strings.HasSuffix(p, "/messages"):
		return anthropicDialect, routeGenerate
	case strings.HasSuffix(p, "/responses"):
		return responsesDialect, routeGenerate
	}
	if _, method, ok := geminiMethod(p); ok {
		if method == "countTokens" {
			return geminiDialect, routeCountTokens
		}
		return geminiDialect, routeGenerate
	}
	switch {
	case strings.HasSuffix(p, "/models") && (strings.Contains(p, "/v1beta/") || r.Header.Get("X-Goog-Api-Key") != ""):
		return geminiDialect, routeModels
	case strings.HasSuffix(p, "/models"):
		return chatDialect, routeModels
	case strings.Contains(p, "/v1beta/") || strings.Contains(p, ":") || r.Header.Get("X-Goog-Api-Key") != "":
		return geminiDialect, routeUnknown
	case r.Header.Get("Anthropic-Version") != "":
		return anthropicDialect, routeUnknown
	}
	return chatDialect, routeUnknown
}

// detectShape picks the dialect of a generation request on an unknown path
// by its body: Gemini when it has contents, Responses when it has input and
// a field only Responses has,
// Anthropic when it has messages and a top-level system or an
// anthropic-version header, else Chat Completions when it has messages.
func detectShape(r *http.Request, body []byte) (*dialect, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return nil, false
	}
	if _, ok := fields["contents"]; ok {
		return geminiDialect, true
	}
	if _, ok := fields["input"]; ok { // an embeddings request has input too, but none of these
		for _, k := range []string{"instructions", "tools", "stream", "max_output_tokens", "reasoning", "store", "previous_response_id"} {
			if _, ok := fields[k]; ok {
				return responsesDialect, true
			}
		}
		return nil, false
	}
	if _, ok := fields["messages"]; !ok {
		return nil, false
	}
	if _, sys := fields["system"]; sys || r.Header.Get("Anthropic-Version") != "" {
		return anthropicDialect, true
	}
	return chatDialect, true
}

// readBody reads an agent's request body, bounded.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *failure) {
	max := g.opts.MaxRequestBody
	tooBig := &failure{http.StatusRequestEntityTooLarge, failTooLarge, fmt.Sprintf("gateway: request body over %d bytes", max)}
	if r.ContentLength > max {
		return nil, tooBig
	}
	if enc := r.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		return nil, &failure{http.StatusUnsupportedMediaType, failInvalid, "gateway: unsupported Content-Encoding " + enc}
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, tooBig
		}
		return nil, &failure{http.StatusBadRequest, failInvalid, "gateway: cannot read request body: " + err.Error()}
	}
	return b, nil
}

// countTokens answers a count_tokens request locally with an estimate: it
// is auxiliary traffic, never sent upstream, recorded or counted against a
// budget.
func (g *Gateway) countTokens(w http.ResponseWriter, d *dialect, body []byte) {
	if !json.Valid(body) {
		d.writeError(w, failure{http.StatusBadRequest, failInvalid, "gateway: malformed request: not JSON"})
		return
	}
	if d == geminiDialect {
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": countTokensEstimate(body)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"input_tokens": countTokensEstimate(body)})
}

// models answers a model listing with the upstream's model.
func (g *Gateway) models(w http.ResponseWriter, d *dialect) {
	m := g.opts.Upstream.Model
	if m == "" {
		m = "default"
	}
	if d == geminiDialect {
		writeJSON(w, http.StatusOK, map[string]any{"models": []any{map[string]any{
			"name": "models/" + m, "displayName": m,
			"supportedGenerationMethods": []string{"generateContent", "streamGenerateContent", "countTokens"}}}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
		map[string]any{"id": m, "object": "model", "created": 0, "owned_by": "harnessd"},
	}})
}
