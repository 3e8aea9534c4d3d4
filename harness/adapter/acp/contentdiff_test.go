package acp

import (
	"encoding/json"
	"strings"
	"testing"
)

// oldContentTexts is a tool call's content as it was read before its
// items were scanned one at a time: decoded whole into a slice of structs
// (which json.Unmarshal fills in part even when an item does not decode),
// the texts only when all did, and whether the slice was not empty.
func oldContentTexts(content json.RawMessage) (texts []string, items bool) {
	var parts []struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(content, &parts) == nil {
		for _, p := range parts {
			var b struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if p.Type == "content" && json.Unmarshal(p.Content, &b) == nil && b.Type == "text" {
				texts = append(texts, b.Text)
			}
		}
	}
	return texts, len(parts) > 0
}

// contentSeeds are tool call contents in the shapes an agent (untrusted)
// may send.
var contentSeeds = []string{
	`[{"type":"content","content":{"type":"text","text":"out"}},{"type":"diff","path":"/a","oldText":"x","newText":"y"},{"type":"terminal","terminalId":"t"}]`,
	`[]`, `null`, `{}`, `"x"`, `[null]`, `[{}]`, `[1]`, `[[]]`, `[{"type":1}]`,
	`[{"Type":"content","CONTENT":{"type":"text","text":"a"}},{"t\u0079pe":"content","content":{"type":"text","text":"b"}}]`,
	`[{"type":"content","content":{"type":"text","text":"a"}},1,{"type":"content","content":{"type":"text","text":"b"}}]`,
	`[{"type":"content","type":null,"content":{"type":"text","text":"a"}},{"type":"content","content":null},{"type":"content","content":"s"}]`,
	`[ {"type":"content","content":{"type":"image","data":"x"}} , {"type":"content" ,"content": {"type":"text","text":"\u00e9\ud83d\ude00"}} ]`,
	"[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"\xff\"}},{\"ty\xc3\xa9\":\"content\"}]",
	`[{"type":"content","content":{"type":"text","text":"a"},"content":{"type":"text"}},{"type":"contenſ"}]`,
}

// FuzzContentTexts checks that a tool call's content, scanned one item at
// a time, gives the texts and the non-empty list that the whole decode
// gave, for any valid JSON content (it comes from a decoded update).
func FuzzContentTexts(f *testing.F) {
	for _, s := range contentSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		raw = []byte(strings.TrimSpace(string(raw)))
		wt, wi := oldContentTexts(raw)
		gt, gi := contentTexts(raw)
		if strings.Join(gt, "\x00") != strings.Join(wt, "\x00") || len(gt) != len(wt) || gi != wi {
			t.Fatalf("%q: texts %q items %v, was %q %v", raw, gt, gi, wt, wi)
		}
	})
}
