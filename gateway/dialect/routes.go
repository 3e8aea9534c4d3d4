package dialect

import (
	"net/http"
	"net/url"
	"path"
	"strings"
)

// RouteKind says what a route does.
type RouteKind int

// Route kinds.
const (
	// RouteGenerate is a generation request: translated to the engine, or
	// forwarded to a passthrough provider.
	RouteGenerate RouteKind = iota
	// RouteCountTokens is a token count, answered by the gateway itself.
	RouteCountTokens
	// RouteModels is the model listing, answered by the gateway itself.
	RouteModels
)

// Route is a request matched to one of the routes a dialect defines.
type Route struct {
	// Dialect is the dialect that defines it.
	Dialect Name
	// Kind is what it does.
	Kind RouteKind
	// Method is the method it takes: GET for the model listing, else POST.
	Method string
	// Path is the route's path as the dialect defines it (Gemini's method
	// in its own spelling): the only path a passthrough forwards to.
	Path string
	// Query is the query parameters of the request that the dialect uses
	// (Anthropic's beta, Gemini's alt); no other parameter is forwarded,
	// and the key never is.
	Query url.Values
}

// Why a request matches no route.
const (
	// RefusedPath: the path is not a plain route path: a dot segment, a
	// double or trailing slash, percent-encoding (an encoded slash, ? or
	// #), or a character no route has.
	RefusedPath = "path"
	// RefusedRoute: a plain path that no dialect defines.
	RefusedRoute = "route"
)

// RefusalReasons lists the reasons Match gives.
var RefusalReasons = []string{RefusedPath, RefusedRoute}

// fixedRoutes are the routes without a parameter in the path. The model
// listing is Chat's, or Gemini's when the request carries Google's key
// header (Gemini CLI lists at its base URL's /v1/models).
var fixedRoutes = map[string]Route{
	"/v1/chat/completions":      {Dialect: Chat, Kind: RouteGenerate, Method: http.MethodPost},
	"/v1/responses":             {Dialect: Responses, Kind: RouteGenerate, Method: http.MethodPost},
	"/v1/messages":              {Dialect: Anthropic, Kind: RouteGenerate, Method: http.MethodPost},
	"/v1/messages/count_tokens": {Dialect: Anthropic, Kind: RouteCountTokens, Method: http.MethodPost},
	"/v1/models":                {Dialect: Chat, Kind: RouteModels, Method: http.MethodGet},
	"/v1beta/models":            {Dialect: Gemini, Kind: RouteModels, Method: http.MethodGet},
}

// queryParams are the query parameters each dialect uses, forwarded when
// their value is a plain word.
var queryParams = map[Name][]string{Anthropic: {"beta"}, Gemini: {"alt"}}

// Match returns the route of r among the routes the dialects define:
// OpenAI's POST /v1/chat/completions and /v1/responses, Anthropic's POST
// /v1/messages and /v1/messages/count_tokens, Gemini's POST
// /v1beta/models/MODEL:generateContent, :streamGenerateContent and
// :countTokens (also under /v1, the method matched case-insensitively),
// and GET /v1/models and /v1beta/models. The path must be exactly one of
// these; reason ("" when a route matched) says why it is not. The route
// matches whatever r's method; the caller answers 405 to a wrong one.
func Match(r *http.Request) (rt Route, reason string) {
	p := r.URL.Path
	if !plainPath(r.URL) {
		return Route{}, RefusedPath
	}
	if fixed, ok := fixedRoutes[p]; ok {
		rt = fixed
		rt.Path = p
		if rt.Kind == RouteModels && r.Header.Get("X-Goog-Api-Key") != "" {
			rt.Dialect = Gemini
		}
	} else if g, ok := geminiRoute(p); ok {
		rt = g
	} else {
		return Route{}, RefusedRoute
	}
	rt.Query = url.Values{}
	q := r.URL.Query()
	for _, k := range queryParams[rt.Dialect] {
		if v := q.Get(k); v != "" && plainWord(v) {
			rt.Query.Set(k, v)
		}
	}
	return rt, ""
}

// plainPath reports whether u's path is a clean absolute path of the
// characters routes are made of, with nothing percent-encoded.
func plainPath(u *url.URL) bool {
	p := u.Path
	if p == "" || p[0] != '/' || path.Clean(p) != p || strings.Contains(u.EscapedPath(), "%") || u.RawPath != "" {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '.' || c == '_' || c == '-' || c == ':') {
			return false
		}
	}
	return true
}

// plainWord reports whether v is a short word of letters, digits, '_' or '-'.
func plainWord(v string) bool {
	if len(v) > 32 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// geminiRoute matches /VERSION/models/MODEL:METHOD, VERSION v1beta or v1,
// MODEL a plain name (letters, digits, '.', '_', '-', not starting with
// '.'), METHOD one of Gemini's generation or count methods.
func geminiRoute(p string) (Route, bool) {
	var rest string
	for _, v := range []string{"/v1beta/models/", "/v1/models/"} {
		if r, ok := strings.CutPrefix(p, v); ok {
			rest = r
			break
		}
	}
	model, method, ok := strings.Cut(rest, ":")
	if !ok || model == "" || model[0] == '.' || strings.ContainsAny(model, "/:") || strings.Contains(method, ":") {
		return Route{}, false
	}
	_, canonical, ok := GeminiMethod("/models/" + model + ":" + method)
	if !ok {
		return Route{}, false
	}
	kind := RouteGenerate
	if canonical == "countTokens" {
		kind = RouteCountTokens
	}
	version := p[:strings.Index(p, "/models/")]
	return Route{Dialect: Gemini, Kind: kind, Method: http.MethodPost, Path: version + "/models/" + model + ":" + canonical}, true
}

// Guess returns the dialect whose error shape suits a request that matched
// no route: Gemini's for a v1beta path, a ':' in the path or Google's key
// header; Anthropic's for an anthropic-version header; else OpenAI's.
func Guess(r *http.Request) Name {
	p := r.URL.Path
	switch {
	case strings.Contains(p, "/v1beta/") || strings.Contains(p, ":") || r.Header.Get("X-Goog-Api-Key") != "":
		return Gemini
	case r.Header.Get("Anthropic-Version") != "":
		return Anthropic
	}
	return Chat
}
