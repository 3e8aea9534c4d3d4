package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// refURLs is the URL walk written plainly with encoding/json's tokens
// (the first version of it, 100 MB/s): the reference urlScan's byte scan
// must agree with (FuzzURLScanAgreesWithTokens).
func refURLs(top string, v []byte) ([]fetchedURL, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber() // 1E700 is valid JSON, beyond a float64
	w := refWalk{dec: dec}
	return w.value(top, "")
}

// FuzzURLScanAgreesWithTokens: on any valid JSON value, the byte scan
// finds what the token walk finds, at the same paths, and never panics.
func FuzzURLScanAgreesWithTokens(f *testing.F) {
	for _, s := range []string{
		`[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://a.example/x"}}]}]`,
		`[{"type":"tool_use","input":{"url":"https://a"}},{"type":"x_call","action":{"image_url":"//h/p"}},{"TYPE":"text","file_data":" gs://b"}]`,
		`{"functionResponse":{"response":{"url":"https://a"},"parts":[{"fileData":{"fileUri":"https://b"}}]}}`,
		`[{"\u0075rl":"https://a","url":"data:x","Url":"","video":["https://v",1,null,{"url":"x"}]}]`,
		`[{"citations":[{"url":"https://a"}],"filename":"file:///x","metadata":"https://m","type":"tool_use","type":"text","audio_url":"https://c"}]`,
		`"https://top"`, `[]`, `{}`, `[1, true, null, -2.5e3, "x"]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if !json.Valid(v) {
			return
		}
		want, err := refURLs("messages", v)
		if err != nil {
			t.Fatalf("reference on valid JSON: %v", err)
		}
		got, ok := scanURLs("messages", v)
		if !ok || !slices.Equal(got, want) {
			t.Fatalf("%s:\nscan   %v (%v)\ntokens %v", v, got, ok, want)
		}
	})
}

// refWalk reads one JSON value token by token (every member, duplicates
// included) and collects the URLs a provider would fetch.
type refWalk struct {
	dec *json.Decoder
}

// value reads the next value, at path, under the key under (as written;
// an array's elements are under the array's key, the top under "").
func (w *refWalk) value(path, under string) ([]fetchedURL, error) {
	t, err := w.dec.Token()
	if err != nil {
		return nil, err
	}
	return w.from(t, path, under)
}

// from reads the value that starts with token t.
func (w *refWalk) from(t json.Token, path, under string) ([]fetchedURL, error) {
	switch t {
	case json.Delim('{'):
		return w.object(path, under)
	case json.Delim('['):
		var found []fetchedURL
		for i := 0; w.dec.More(); i++ {
			f, err := w.value(path+"["+strconv.Itoa(i)+"]", under)
			if err != nil {
				return nil, err
			}
			found = append(found, f...)
		}
		_, err := w.dec.Token() // ']'
		return found, err
	}
	s, ok := t.(string)
	if ok && (slices.Contains(urlKeys, strings.ToLower(under)) && fetchable(s) || refMediaKey(under) && remoteURL(s)) {
		return []fetchedURL{{Where: path, URL: s}}, nil
	}
	return nil, nil
}

// refMediaKey is mediaKey by splitting the key into strings.
func refMediaKey(key string) bool {
	words := keyWords(key)
	if len(words) == 0 || words[len(words)-1] == "name" {
		return false
	}
	return slices.ContainsFunc(words, func(w string) bool { return slices.Contains(mediaKeyWords, w) })
}

// keyWords splits key into lower-case words.
func keyWords(key string) []string {
	var words []string
	start := 0
	for i, c := range key {
		switch {
		case c == '_' || c == '-' || c == '.' || c == ' ':
			if i > start {
				words = append(words, strings.ToLower(key[start:i]))
			}
			start = i + 1
		case c >= 'A' && c <= 'Z' && i > start && key[i-1] >= 'a' && key[i-1] <= 'z':
			words = append(words, strings.ToLower(key[start:i]))
			start = i
		}
	}
	if start < len(key) {
		words = append(words, strings.ToLower(key[start:]))
	}
	return words
}

// object reads an object's members after its '{'. What is found in an
// object that is the model's own tool call (every "type" it has ends in
// "tool_use" or "_call": Anthropic's tool_use, server_tool_use,
// mcp_tool_use; Responses' function_call, local_shell_call, shell_call,
// computer_call…) is dropped: its arguments are the model's words. So is
// a Gemini functionResponse's "response" (a tool's output as JSON).
func (w *refWalk) object(path, under string) ([]fetchedURL, error) {
	var found []fetchedURL
	var types []string
	for w.dec.More() {
		t, err := w.dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		lk, p := strings.ToLower(key), path+"."+key
		lunder := strings.ToLower(under)
		if slices.Contains(neverFetched, lk) ||
			lk == "response" && (lunder == "functionresponse" || lunder == "function_response") {
			if err := skipNext(w.dec); err != nil {
				return nil, err
			}
			continue
		}
		v, err := w.dec.Token()
		if err != nil {
			return nil, err
		}
		if s, ok := v.(string); ok && lk == "type" {
			types = append(types, strings.ToLower(s))
		}
		f, err := w.from(v, p, key)
		if err != nil {
			return nil, err
		}
		found = append(found, f...)
	}
	if _, err := w.dec.Token(); err != nil { // '}'
		return nil, err
	}
	if len(types) > 0 && !slices.ContainsFunc(types, notACall) {
		return nil, nil
	}
	return found, nil
}

// notACall says whether an object of type t is not the model's own tool
// call.
func notACall(t string) bool {
	return !strings.HasSuffix(t, "tool_use") && !strings.HasSuffix(t, "_call")
}

// skipNext reads the decoder's next value and drops it.
func skipNext(dec *json.Decoder) error {
	var v json.RawMessage
	err := dec.Decode(&v)
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
