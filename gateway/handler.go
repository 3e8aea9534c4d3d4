package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/harnessd/harnessd/gateway/dialect"
	"github.com/harnessd/harnessd/internal/doorcap"
	"github.com/harnessd/harnessd/wire"
)

// ServeHTTP implements http.Handler: the agent-facing endpoint.
//
// It serves only the routes the dialects define (dialect.Match): POST
// /v1/chat/completions (OpenAI Chat Completions), /v1/responses (OpenAI
// Responses), /v1/messages and /v1/messages/count_tokens (Anthropic
// Messages), /v1beta/models/MODEL:generateContent, :streamGenerateContent
// and :countTokens (Gemini, also under /v1; the method case-insensitively)
// and GET /v1/models and /v1beta/models (a listing of the upstream's
// model). HEAD or GET / answers a connectivity probe without a key.
// Everything else needs the episode's key; with it, any other path (not
// normalised, or no model route) is refused with 404 in the dialect's
// error shape, recorded as an error event and counted (RefusedRequests),
// and never reaches the upstream.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
		return
	}
	rt, refused := dialect.Match(r)
	name := rt.Dialect
	if refused != "" {
		name = dialect.Guess(r)
	}
	d := dialect.New(name)
	if !g.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="harnessd-gateway"`)
		d.WriteError(w, failure{Status: http.StatusUnauthorized, Kind: failAuth, Message: "gateway: invalid or missing API key"})
		return
	}
	if refused != "" {
		g.refuse(w, r, d, refused)
		return
	}
	if r.Method != rt.Method {
		d.WriteError(w, failure{Status: http.StatusMethodNotAllowed, Kind: failMethod, Message: "gateway: method " + r.Method + " not allowed on " + rt.Path})
		return
	}
	if rt.Kind == dialect.RouteModels {
		g.models(w, d)
		return
	}
	body, release, f := g.readBody(w, r)
	if f != nil {
		d.WriteError(w, *f)
		return
	}
	defer release()
	if rt.Kind == dialect.RouteCountTokens {
		g.countTokens(w, d, body)
		return
	}
	g.generate(w, r, d, rt, body)
}

// readBody reads an agent's request body, bounded on its own
// (MaxRequestBody) and with the door's other bodies (the body budget,
// Options.Door.BodyBytes, and its read timeout); release gives its bytes
// back to the budget once the call is done with them. A body the budget
// has no room for is refused with 503 (Anthropic: 529 overloaded_error),
// which agents retry; one not received within the read timeout with 408.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), f *failure) {
	max := g.opts.MaxRequestBody
	tooBig := &failure{Status: http.StatusRequestEntityTooLarge, Kind: failTooLarge, Message: fmt.Sprintf("gateway: request body over %d bytes", max)}
	if r.ContentLength > max {
		return nil, nil, tooBig
	}
	if enc := r.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		return nil, nil, &failure{Status: http.StatusUnsupportedMediaType, Kind: failInvalid, Message: "gateway: unsupported Content-Encoding " + enc}
	}
	in, err := g.bodies.Open(w, r)
	if err != nil {
		return nil, nil, bodyFailure(w, err)
	}
	b, err := readAllSized(http.MaxBytesReader(w, io.NopCloser(in), max), r.ContentLength)
	if err == nil {
		// What the dialect's decoding makes of it is held with it.
		err = in.ChargeValues(wire.DecodedValues(b), decodedValueBytes)
	}
	if err != nil {
		in.Release()
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, nil, tooBig
		}
		if f := bodyFailure(w, err); f != nil {
			return nil, nil, f
		}
		return nil, nil, &failure{Status: http.StatusBadRequest, Kind: failInvalid, Message: "gateway: cannot read request body: " + err.Error()}
	}
	return b, in.Release, nil
}

// decodedValueBytes is what the gateway's door charges its body budget for
// each JSON object, array or array element of a request besides its bytes
// (doorcap.Body.ChargeValues): a dialect decodes messages, blocks, parts
// and tool calls into typed structs, captures and re-encodes them, and a
// request of empty tool calls ({},) cost the gateway 1,300 to 1,600 bytes
// an element (measured with the engine in a process of its own: 100,000
// of them, 293 KB, allocated 152 MiB). An agent's request has a few
// thousand values: tens of megabytes of a long conversation, a few
// hundred kilobytes of tool schemas.
const decodedValueBytes = 2048

// bodyFailure is the answer to a body the door's budget refused or its
// read timeout dropped, or nil for any other error.
func bodyFailure(w http.ResponseWriter, err error) *failure {
	status, msg, ok := doorcap.BodyRefusal(w, err)
	switch {
	case !ok:
		return nil
	case status == http.StatusServiceUnavailable:
		return &failure{Status: status, Kind: failUnavailable, Message: "gateway: " + msg}
	case status == http.StatusRequestEntityTooLarge:
		return &failure{Status: status, Kind: failTooLarge, Message: "gateway: " + msg}
	}
	return &failure{Status: status, Kind: failInvalid, Message: "gateway: " + msg}
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
