package streamjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// oldBlock and oldBlocks are message content as it was decoded before it
// was read one block at a time: whole, into a []block.
type oldBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func oldBlocks(raw json.RawMessage) ([]oldBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []oldBlock{{Type: "text", Text: s}}, nil
	}
	var bs []oldBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, err
	}
	return bs, nil
}

func oldContentText(raw json.RawMessage) string {
	bs, err := oldBlocks(raw)
	if err != nil {
		return string(raw)
	}
	parts := make([]string, 0, len(bs))
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

// blockSeeds are message contents in the shapes a harness (untrusted) may
// write: keys in other cases, escaped, twice, null; values of the wrong
// type; nested lists; unicode and invalid UTF-8; white space everywhere.
var blockSeeds = []string{
	`[{"type":"text","text":"hi"},{"type":"thinking","thinking":"t"},{"type":"tool_use","id":"c","name":"Bash","input":{"command":"ls"}}]`,
	`[{"type":"tool_result","tool_use_id":"c","content":[{"type":"text","text":"out"},{"type":"image"}],"is_error":true}]`,
	`[{"type":"tool_result","tool_use_id":"c","content":"plain"}]`,
	`"just text"`, `null`, `[]`, `[null,{}]`, `{}`, `1`, `[1]`, `[[]]`, `[""]`,
	`[{"Type":"text","TEXT":"a"},{"t\u0079pe":"text","text":"b"},{"type":"text","type":"thinking","thinking":"c"}]`,
	`[{"type":"text","text":"a","text":null},{"type":null},{"is_error":"x"},{"is_error":null,"type":"tool_result"},{"input":null}]`,
	`[ { "type" : "text" , "text" : "a\u00e9\ud83d\ude00" } , { "type":"text","text":"\u0000" } ]`,
	"[{\"type\":\"text\",\"text\":\"\xff\xfe\"},{\"type\":\"te\xc3\xa9t\"}]",
	`[{"type":"text","tool_use_ıd":"x","ID":"y","ſtatus":1,"K":2}]`,
	`[{"type":"tool_result","content":[{"type":"tool_result","content":[[]]}],"content":{"a":[1,2]}}]`,
}

// FuzzBlocks checks that stream-json message content read one block at a
// time gives the blocks (and the tool result text) json.Unmarshal into the
// former []block gave, and fails alike, for any valid JSON content.
func FuzzBlocks(f *testing.F) {
	for _, s := range blockSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // content comes from a decoded line
		}
		raw = []byte(strings.TrimSpace(string(raw))) // as a json.RawMessage holds it
		want, werr := oldBlocks(raw)
		got, gerr := blocks(raw, func(*block) bool { return true })
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: error %v, was %v", raw, gerr, werr)
		}
		if werr == nil {
			if len(got) != len(want) {
				t.Fatalf("%q: %d blocks, was %d", raw, len(got), len(want))
			}
			for i := range want {
				g := got[i]
				if g.index != i {
					t.Fatalf("%q: block %d has index %d", raw, i, g.index)
				}
				g.index = 0
				w := block{Type: want[i].Type, Text: want[i].Text, Thinking: want[i].Thinking, ID: want[i].ID, Name: want[i].Name,
					Input: want[i].Input, ToolUseID: want[i].ToolUseID, Content: want[i].Content, IsError: want[i].IsError}
				if !reflect.DeepEqual(g, w) {
					t.Fatalf("%q: block %d is %s, was %s", raw, i, fmt.Sprintf("%+v", g), fmt.Sprintf("%+v", w))
				}
			}
		}
		if g, w := contentText(raw), oldContentText(raw); g != w {
			t.Fatalf("%q: tool result text %q, was %q", raw, g, w)
		}
	})
}
