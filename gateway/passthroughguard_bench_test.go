package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// longConversation is an Anthropic request body of n tool rounds (a
// tool's output of 2 KB, the model's text and a Bash call each): about
// 2.6 KB a round.
func longConversation(n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"model":"c","max_tokens":9,"messages":[`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"%s"}]},`+
			`{"role":"assistant","content":[{"type":"text","text":"see https://example.com/%d"},{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"curl https://example.com/%d"}}]}`,
			i, strings.Repeat("output line of a command ", 80), i, i, i)
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

// BenchmarkPassthroughGuard: what the passthrough's guard of the provider's
// network costs on a 1 MB conversation (a sandboxed harness without
// egress, each call): reading the body's members, the URL scan, leaving
// out network tools; the floor is json.Valid, the cheapest full reading
// of the body. make bench prints each as ns per MB and as a ratio to the
// floor.
func BenchmarkPassthroughGuard(b *testing.B) {
	body := longConversation(400)
	ms, err := members(body)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"floor_json_valid", func() { json.Valid(body) }},
		{"members", func() { members(body) }},
		{"url_scan", func() {
			if u := urlFetched(ms); u != nil {
				b.Fatal(u)
			}
		}},
		{"network_tools", func() { withoutProviderNetwork(DialectAnthropic, ms) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				c.f()
			}
		})
	}
}
