package gateway

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/harnessd/harnessd/internal/jsonscan"
)

// urlScan walks one JSON value byte by byte (jsonscan: no tokens, no
// decoding but of the few strings it looks at) and collects the URLs a
// provider would fetch. The value must be valid JSON: members read it with
// encoding/json, which also bounds its nesting. Every member is looked at,
// duplicates included, in any letter case; escaped keys are decoded.
type urlScan struct {
	b     []byte
	path  []pathStep // where the walk is, rendered only for a finding
	found []fetchedURL
}

// pathStep is one step of a JSON path: a member's key or, with key nil,
// an array's index.
type pathStep struct {
	key   []byte
	index int
}

// scanURLs is what urlScan finds in the value v of the top-level member
// named top. ok is false when v is not valid JSON after all, which the
// scan, reading past the end, finds out by a panic it recovers from: the
// members' decoder validated v, so that is a bug, and the request is then
// refused rather than passed unread.
func scanURLs(top string, v []byte) (found []fetchedURL, ok bool) {
	defer func() {
		if recover() != nil {
			found, ok = nil, false
		}
	}()
	w := urlScan{b: v, path: []pathStep{{key: []byte(top)}}}
	w.value(jsonscan.Space(v, 0), nil)
	return w.found, true
}

// value walks the value at b[i] under key under (nil at the top; an
// array's elements are under the array's key) and returns its end.
func (w *urlScan) value(i int, under []byte) int {
	switch w.b[i] {
	case '{':
		return w.object(i, under)
	case '[':
		return w.array(i, under)
	case '"':
		end := jsonscan.String(w.b, i)
		if under != nil && (urlKey(under) || mediaKeyBytes(under)) {
			if s, ok := jsonscan.StringValue(w.b[i:end]); ok &&
				(urlKey(under) && fetchable(s) || mediaKeyBytes(under) && remoteURL(s)) {
				w.found = append(w.found, fetchedURL{Where: w.where(), URL: s})
			}
		}
		return end
	}
	return jsonscan.Value(w.b, i, 0)
}

// array walks the array at b[i], each element under under.
func (w *urlScan) array(i int, under []byte) int {
	i = jsonscan.Space(w.b, i+1)
	for n := 0; w.b[i] != ']'; n++ {
		w.path = append(w.path, pathStep{index: n})
		i = jsonscan.Space(w.b, w.value(i, under))
		w.path = w.path[:len(w.path)-1]
		if w.b[i] == ',' {
			i = jsonscan.Space(w.b, i+1)
		}
	}
	return i + 1
}

// object walks the object at b[i]. What is found in an object that is the
// model's own tool call (every "type" it has ends in "tool_use" or
// "_call": Anthropic's tool_use, server_tool_use, mcp_tool_use; Responses'
// function_call, local_shell_call, shell_call, computer_call…) is
// dropped: its arguments are the model's words. Members in neverFetched
// are not looked into, nor a Gemini functionResponse's "response" (a
// tool's output as JSON).
func (w *urlScan) object(i int, under []byte) int {
	mark, typed, call := len(w.found), false, true
	inResponse := foldIn(under, "functionresponse", "function_response")
	i = jsonscan.Space(w.b, i+1)
	for w.b[i] != '}' {
		kend := jsonscan.String(w.b, i)
		key := keyBytes(w.b[i:kend])
		i = jsonscan.Space(w.b, jsonscan.Space(w.b, kend)+1) // past ':'
		switch {
		case foldIn(key, neverFetched...), inResponse && bytes.EqualFold(key, []byte("response")):
			i = jsonscan.Value(w.b, i, 0)
		default:
			if bytes.EqualFold(key, []byte("type")) && w.b[i] == '"' {
				typed = true
				end := jsonscan.String(w.b, i)
				call = call && isCall(w.b[i:end])
			}
			w.path = append(w.path, pathStep{key: key})
			i = w.value(i, key)
			w.path = w.path[:len(w.path)-1]
		}
		if i = jsonscan.Space(w.b, i); w.b[i] == ',' {
			i = jsonscan.Space(w.b, i+1)
		}
	}
	if typed && call {
		w.found = w.found[:mark]
	}
	return i + 1
}

// where renders the walk's path: messages[0].content[1].source.url.
func (w *urlScan) where() string {
	var sb strings.Builder
	for n, s := range w.path {
		switch {
		case s.key == nil:
			sb.WriteString("[" + strconv.Itoa(s.index) + "]")
		case n > 0:
			sb.WriteByte('.')
			fallthrough
		default:
			sb.Write(s.key)
		}
	}
	return sb.String()
}

// keyBytes is the JSON string raw as bytes: its inside when it has no
// escapes and is UTF-8, else decoded (as encoding/json does: bytes that
// are not UTF-8 become U+FFFD).
func keyBytes(raw []byte) []byte {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner
	}
	s, _ := jsonscan.StringValue(raw)
	return []byte(s)
}

// isCall says whether the JSON string raw, a "type", names the model's
// own tool call: it ends in "tool_use" or "_call" in any letter case.
func isCall(raw []byte) bool {
	t := keyBytes(raw)
	return hasSuffixFold(t, "tool_use") || hasSuffixFold(t, "_call")
}

func hasSuffixFold(b []byte, suffix string) bool {
	return len(b) >= len(suffix) && bytes.EqualFold(b[len(b)-len(suffix):], []byte(suffix))
}

// foldIn says whether b is one of names in any letter case.
func foldIn(b []byte, names ...string) bool {
	for _, n := range names {
		if len(b) == len(n) && bytes.EqualFold(b, []byte(n)) {
			return true
		}
	}
	return false
}

// urlKey says whether key is one of urlKeys in any letter case.
func urlKey(key []byte) bool { return foldIn(key, urlKeys...) }

// mediaKeyBytes is mediaKey for a key as bytes, without allocating: one
// of its words is one of mediaKeyWords and its last is not "name".
func mediaKeyBytes(key []byte) bool {
	media, last := false, []byte(nil)
	forEachWord(key, func(w []byte) {
		media = media || foldIn(w, mediaKeyWords...)
		last = w
	})
	return media && !bytes.EqualFold(last, []byte("name"))
}

// forEachWord calls f with each word of key, split at '_', '-', '.', ' '
// and a lower-case letter before an upper-case one ("fileUri").
func forEachWord(key []byte, f func([]byte)) {
	start := 0
	for i, c := range key {
		switch {
		case c == '_' || c == '-' || c == '.' || c == ' ':
			if i > start {
				f(key[start:i])
			}
			start = i + 1
		case c >= 'A' && c <= 'Z' && i > start && key[i-1] >= 'a' && key[i-1] <= 'z':
			f(key[start:i])
			start = i
		}
	}
	if start < len(key) {
		f(key[start:])
	}
}
