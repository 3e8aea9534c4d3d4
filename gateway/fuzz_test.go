package gateway

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/harnessd/harnessd/gateway/dialect"
)

// FuzzDecode feeds arbitrary bodies to every dialect's decoder, the
// hygiene that follows and the engine answer parser: none may panic, and a
// decoded request always yields an engine body.
// Run: go test -fuzz=FuzzDecode -fuzztime=10s ./gateway
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	g := fuzzGateway(f)
	f.Fuzz(func(t *testing.T, body []byte) { decodeAll(t, g, body) })
}

// TestDecodeMutations runs the fuzz target's checks over 20,000
// deterministic mutations of its seeds, so every test run exercises
// malformed input beyond the seeds without the fuzzing engine.
func TestDecodeMutations(t *testing.T) {
	g := fuzzGateway(t)
	rng := rand.New(rand.NewPCG(1, 2))
	junk := []byte(`{}[]",:0123456789-.etrufalsn\\u `)
	for i := range 20000 {
		b := []byte(decodeSeeds[i%len(decodeSeeds)])
		for range 1 + rng.IntN(4) {
			switch p := rng.IntN(len(b) + 1); rng.IntN(3) {
			case 0: // insert
				b = append(b[:p], append([]byte{junk[rng.IntN(len(junk))]}, b[p:]...)...)
			case 1: // delete
				if p < len(b) {
					b = append(b[:p], b[p+1:]...)
				}
			case 2: // truncate
				b = b[:p]
			}
		}
		decodeAll(t, g, b)
	}
}

var decodeSeeds = []string{
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[],"tool_choice":"auto","max_tokens":64000,"stream":true}`,
	`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"1","function":{"name":"f","arguments":"{}"}}]}]}`,
	`{"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"5"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]}`,
	`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"x","input":{"a":1}},{"type":"thinking","thinking":"hm"}]}],"tools":[{"name":"x","input_schema":{}}],"tool_choice":{"type":"tool","name":"x","disable_parallel_tool_use":true}}`,
	`{"prompt_token_ids":[1],"choices":[{"message":{"content":"x","tool_calls":[{"function":{"name":"f"}}]},"token_ids":[2],"logprobs":{"content":[{"token":"token_id:2","logprob":"-1"}]}}]}`,
	`{"instructions":"i","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"x"}]},{"type":"function_call","call_id":"c","name":"f","arguments":""},{"type":"function_call_output","call_id":"c","output":"5"}],"tools":[{"type":"function","name":"f"},{"type":"web_search"}],"tool_choice":{"type":"function","name":"f"}}`,
	`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1}}},{"text":"t","thought":true}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"5"}}}]}],"tools":[{"functionDeclarations":[{"name":"f","parametersJsonSchema":{}}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY"}},"generationConfig":{"maxOutputTokens":5}}`,
	`{"messages":"x"}`, `[]`, `null`, `{}`, `{"messages":[null]}`, `{"max_tokens":-5,"messages":[{"role":"user"}]}`,
}

func fuzzGateway(tb testing.TB) *Gateway {
	g, err := New(Options{Upstream: Upstream{URL: "http://127.0.0.1:1/v1", Model: "m"}, Budgets: Budgets{MaxTokens: 100}})
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// decodeAll runs body through every decoder; none may panic, and a
// decoded request always yields an engine body.
func decodeAll(t *testing.T, g *Gateway, body []byte) {
	r := httptest.NewRequest("POST", "/v1beta/models/m:streamGenerateContent?alt=sse", nil)
	for _, name := range dialect.Names {
		req, err := dialect.New(name).Decode(r, body)
		if err != nil {
			continue
		}
		fields, err := req.Chat.Fields()
		if err != nil {
			t.Errorf("%s: decoded request has no chat fields: %v", name, err)
			continue
		}
		eb, _, err := g.engineBody(fields, 100, nil)
		if err != nil {
			t.Errorf("%s: decoded request gives no engine body: %v", name, err)
		}
		if mb, err := json.Marshal(fields); err != nil || !bytes.Equal(mustFields(t, fields), mb) {
			t.Errorf("%s: marshalFields writes otherwise than json.Marshal: %v", name, err)
		}
		if name == dialect.Chat {
			checkCompacted(t, g, r, body, eb)
		}
	}
	if c, err := parseEngineAnswer(body); err == nil {
		validateCall(c)
	}
	cutMember(body, "prompt_token_ids")
}

func mustFields(t *testing.T, fields map[string]json.RawMessage) []byte {
	b, err := marshalFields(fields, nil)
	if err != nil {
		t.Errorf("marshalFields: %v", err)
	}
	return b.bytes()
}

// checkCompacted decodes a Chat Completions body with a memo and checks
// that the engine body written with the decode's compacted messages is
// want, the engine body of the decode without.
func checkCompacted(t *testing.T, g *Gateway, r *http.Request, agent, want []byte) {
	d := dialect.New(dialect.Chat)
	d.(dialect.Memoizer).UseMemo(&dialect.Memo{})
	req, err := d.Decode(r, agent)
	if err != nil {
		t.Errorf("chat: decodes alone but not with a memo: %v", err)
		return
	}
	fields, err := req.Chat.Fields()
	if err != nil {
		t.Fatal(err)
	}
	body, _, err := g.engineBodyOf(fields, req.Chat.CompactMessages(), 100, nil)
	if got := body.bytes(); err != nil || !bytes.Equal(got, want) {
		t.Errorf("chat: engine body with the compacted messages\n%s\nwant\n%s (%v)", got, want, err)
	}
}
