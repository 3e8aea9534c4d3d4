package gateway

import (
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
// .../chat/completions (OpenAI Chat Completions) and GET .../models (a
// listing of the upstream's model). HEAD or GET / answers a connectivity
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
		g.models(w)
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
	if kind == routeUnknown {
		d.writeError(w, failure{http.StatusNotFound, failNotFound, "gateway: no route for POST " + r.URL.Path})
		return
	}
	g.generate(w, r, d, body)
}

// route picks the dialect and kind of a request by its path.
func route(r *http.Request) (*dialect, int) {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		return chatDialect, routeGenerate
	case strings.HasSuffix(p, "/models"):
		return chatDialect, routeModels
	}
	return chatDialect, routeUnknown
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

// models answers a model listing with the upstream's model.
func (g *Gateway) models(w http.ResponseWriter) {
	m := g.opts.Upstream.Model
	if m == "" {
		m = "default"
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
		map[string]any{"id": m, "object": "model", "created": 0, "owned_by": "harnessd"},
	}})
}
