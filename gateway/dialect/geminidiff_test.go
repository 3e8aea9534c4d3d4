package dialect

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
)

// The Gemini request as it was decoded before its lists were read one
// element at a time: whole, into plain slices. FuzzGeminiLists compares
// the lists the request decodes to now with these.
type oldGeminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type oldGeminiRequest struct {
	Contents          []oldGeminiContent `json:"contents"`
	SystemInstruction *oldGeminiContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []geminiDecl `json:"functionDeclarations"`
	} `json:"tools"`
}

// placed lists the elements of a list that are not the zero value, each
// as its place and JSON: what the translation reads of it (a zero element
// translates to nothing). index gives an element's place (nil: its place
// in the list).
func placed[T any](list []T, index func(*T) int, inner func(*T) string) []string {
	zero, _ := json.Marshal(new(T))
	var out []string
	for i := range list {
		v := list[i]
		at := i
		if index != nil {
			at = index(&v)
		}
		s := ""
		if inner != nil {
			s = inner(&v) // and takes the inner list out of v
		}
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte(err.Error())
		}
		if string(b) == string(zero) && s == "" {
			continue
		}
		out = append(out, fmt.Sprintf("%d=%s%s", at, b, s))
	}
	return out
}

// listString is the placed elements of a list as one string ("": none).
func listString(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return fmt.Sprint(l)
}

// geminiListsNow is what the request's lists decode to now.
func geminiListsNow(body []byte) ([]string, error) {
	var in geminiRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	parts := func(ps geminiPartList) string {
		return listString(placed(ps, func(p *geminiPart) int { return p.index }, nil))
	}
	out := []string{fmt.Sprint("contents ", len(in.Contents) > 0)}
	out = append(out, placed(in.Contents, func(c *geminiContent) int { return c.index },
		func(c *geminiContent) string { s := parts(c.Parts); c.Parts = nil; return s })...)
	if si := in.SystemInstruction; si != nil {
		out = append(out, "system "+si.Role+parts(si.Parts))
	}
	for _, tl := range in.Tools {
		out = append(out, fmt.Sprint("tool ", placed(tl.FunctionDeclarations, func(d *geminiDecl) int { return d.index }, nil)))
	}
	return out, nil
}

// geminiListsThen is what they decoded to before.
func geminiListsThen(body []byte) ([]string, error) {
	var in oldGeminiRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	parts := func(ps []geminiPart) string { return listString(placed(ps, nil, nil)) }
	out := []string{fmt.Sprint("contents ", len(in.Contents) > 0)}
	out = append(out, placed(in.Contents, nil,
		func(c *oldGeminiContent) string { s := parts(c.Parts); c.Parts = nil; return s })...)
	if si := in.SystemInstruction; si != nil {
		out = append(out, "system "+si.Role+parts(si.Parts))
	}
	for _, tl := range in.Tools {
		out = append(out, fmt.Sprint("tool ", placed(tl.FunctionDeclarations, nil, nil)))
	}
	return out, nil
}

// geminiListSeeds are request bodies in the shapes an agent (untrusted)
// may send: keys in other cases, escaped, given twice; null, empty and
// wrong-typed lists and elements.
var geminiListSeeds = []string{
	`{"contents":[{"role":"user","parts":[{"text":"a"},{"inlineData":{"mimeType":"image/png","data":"x"}},{}]},{"role":"model","parts":[{"text":"t","thought":true},{"functionCall":{"name":"f","args":{"a":1}}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"r"}}}]},{}],"systemInstruction":{"parts":[{"text":"s"}]},"tools":[{"functionDeclarations":[{"name":"f","description":"d","parameters":{"type":"object"}},{}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}}`,
	`{"contents":[{"role":"user","parts":[{"text":"a"}]}],"contents":[{}]}`,
	`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f"}},{"text":"x"}],"parts":[null,{}]}]}`,
	`{"contents":[{"Role":"user","PARTS":[{"TEXT":"a"}]}],"tools":[{"functionDeclarations":[{"name":"f"}],"FunctionDeclarations":[{}]}]}`,
	`{"Contents":[{"00000":[{"000000000000":""}]}]}`,
	`{"contents":[{},{"role":"user","parts":[{},{"text":"b"}]}],"contents":[{"parts":[{"text":"a"}]}],"c\u006fntents":[null,null,{"role":"model"}]}`,
	`{"contents":[],"contents":null}`, `{"contents":null}`, `{"contents":{}}`, `{"contents":[1]}`, `{"contents":[{"parts":{}}]}`,
	`{"systemInstruction":{"parts":[{"text":"a"}],"parts":[null,{"text":"b"}]},"contents":[{"parts":[{"text":"\u00e9\ud83d\ude00"}]}]}`,
	"{\"contents\":[{\"parts\":[{\"text\":\"\xff\"}]}]}",
}

// FuzzGeminiLists checks that a Gemini request's contents, parts and
// function declarations, read one element at a time, are what
// json.Unmarshal into plain slices gave (the elements that are not zero,
// in their places), and the request read or refused alike, for any bytes.
func FuzzGeminiLists(f *testing.F) {
	for _, s := range geminiListSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		want, werr := geminiListsThen(body)
		got, gerr := geminiListsNow(body)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: error %v, was %v", body, gerr, werr)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%q:\n got %q\nwant %q", body, got, want)
		}
	})
}

// TestGeminiRepeatedKeysTranslateAsBefore: a key that names a list twice
// (in another case, or escaped) was decoded by json.Unmarshal over the
// list as it stood (element i into element i, a shortened list's elements
// there again when a later one is longer); the lists read one element at
// a time took the last alone, and a "Contents" key of only empty contents
// was refused (its count looked up under "contents"). The translations
// here are what the whole decode gave.
func TestGeminiRepeatedKeysTranslateAsBefore(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{geminiListSeeds[1], `[user:"a"] []`},
		{geminiListSeeds[2], `[assistant:"x"[call_0_0 f {}]] []`},
		{geminiListSeeds[3], `[user:"a"] [f]`},
		{geminiListSeeds[4], `[] []`},
		{geminiListSeeds[5], `[user:"a" user:"b" assistant:""] []`},
	} {
		req, err := New(Gemini).Decode(httptest.NewRequest("POST", "/v1beta/models/m:generateContent", nil), []byte(c.body))
		if err != nil {
			t.Errorf("%s: %v", c.body, err)
			continue
		}
		var msgs, tools []string
		for _, m := range req.Chat.Messages {
			s := fmt.Sprintf("%s:%q", m.Role, *m.Content)
			for _, tc := range m.ToolCalls {
				s += fmt.Sprintf("[%s %s %s]", tc.ID, tc.Name, tc.Arguments)
			}
			msgs = append(msgs, s)
		}
		for _, tl := range req.Chat.Tools {
			tools = append(tools, tl.Name)
		}
		if got := fmt.Sprint(msgs, " ", tools); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.body, got, c.want)
		}
	}
}
