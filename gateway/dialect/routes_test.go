package dialect

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestMatch: the routes each dialect defines match, with the path a
// passthrough forwards and only the query parameters the dialect uses;
// anything else matches nothing, for the reason given.
func TestMatch(t *testing.T) {
	for _, c := range []struct {
		target, goog string
		dialect      Name
		kind         RouteKind
		path, query  string
	}{
		{"/v1/chat/completions?team_id=admin", "", Chat, RouteGenerate, "/v1/chat/completions", ""},
		{"/v1/responses", "", Responses, RouteGenerate, "/v1/responses", ""},
		{"/v1/messages?beta=true&x=1", "", Anthropic, RouteGenerate, "/v1/messages", "beta=true"},
		{"/v1/messages/count_tokens?beta=true", "", Anthropic, RouteCountTokens, "/v1/messages/count_tokens", "beta=true"},
		{"/v1/models?client_version=1", "", Chat, RouteModels, "/v1/models", ""},
		{"/v1/models", "k", Gemini, RouteModels, "/v1/models", ""},
		{"/v1beta/models", "", Gemini, RouteModels, "/v1beta/models", ""},
		{"/v1beta/models/gemini-2.5-pro:streamgeneratecontent?alt=sse&key=k", "", Gemini, RouteGenerate, "/v1beta/models/gemini-2.5-pro:streamGenerateContent", "alt=sse"},
		{"/v1/models/gemini-1.5-flash-001:generateContent", "", Gemini, RouteGenerate, "/v1/models/gemini-1.5-flash-001:generateContent", ""},
		{"/v1beta/models/m:countTokens?alt=a%26b", "", Gemini, RouteCountTokens, "/v1beta/models/m:countTokens", ""},
	} {
		r := httptest.NewRequest(http.MethodPost, c.target, nil)
		if c.goog != "" {
			r.Header.Set("X-Goog-Api-Key", c.goog)
		}
		rt, reason := Match(r)
		if reason != "" || rt.Dialect != c.dialect || rt.Kind != c.kind || rt.Path != c.path || rt.Query.Encode() != c.query {
			t.Errorf("%s: %+v %q", c.target, rt, reason)
		}
	}
	for target, want := range map[string]string{
		"/key/generate": RefusedRoute, "/admin/v1/chat/completions": RefusedRoute, "/v1/messages/batches": RefusedRoute,
		"/v1/chat/completions/": RefusedPath, "//v1/chat/completions": RefusedPath, "/v1/../key": RefusedPath,
		"/v1/chat%2Fcompletions": RefusedPath, "/v1/chat/completions%3Fa=b": RefusedPath, "/v1/./responses": RefusedPath,
		"/v1beta/models/a/b:generateContent": RefusedRoute, "/v1beta/models/..:generateContent": RefusedRoute,
		"/v1beta/models/m:embedContent": RefusedRoute, "/v1beta/models/:generateContent": RefusedRoute,
		"/v2/models/m:generateContent": RefusedRoute, "/v1beta/models/m:generateContent:x": RefusedRoute,
		"/v1beta/models/m;x:generateContent": RefusedPath, "/v1/chat/completions\\": RefusedPath,
	} {
		u, err := url.ParseRequestURI(target) // as the server reads a request line
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.URL = u
		if _, reason := Match(r); reason != want {
			t.Errorf("%s: reason %q, want %q", target, reason, want)
		}
	}
}

// FuzzMatch: no request target makes Match panic, and a target it matches
// forwards a plain path (clean, nothing encoded, no dot segment) of a
// model route, with no query parameter but the dialect's own.
// Run: go test -fuzz=FuzzMatch -fuzztime=10s ./gateway/dialect
func FuzzMatch(f *testing.F) {
	for _, s := range []string{"/v1/chat/completions", "/v1/messages?beta=true&key=k", "/v1beta/models/m:streamGenerateContent?alt=sse",
		"/v1/../key", "/v1%2Fchat", "//v1/models", "/v1beta/models/..:countTokens", "http://h/v1/responses?x=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.URL = u
		rt, reason := Match(r)
		if reason != "" {
			return
		}
		if !plainPath(&url.URL{Path: rt.Path}) || strings.Contains(rt.Path, "..") || strings.Contains(rt.Path, "//") {
			t.Errorf("%q matched with path %q", target, rt.Path)
		}
		for k := range rt.Query {
			if k != "alt" && k != "beta" {
				t.Errorf("%q forwards query parameter %q", target, k)
			}
		}
	})
}
