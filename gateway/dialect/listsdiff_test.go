package dialect

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// The lists of the Chat Completions, Anthropic and Responses dialects as
// they were decoded before they were read one element at a time: whole,
// into slices of structs. FuzzDialectLists compares each reading with its
// old decode.

func oldChatParts(c []byte) ([]Part, bool) {
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if json.Unmarshal(c, &parts) != nil {
		return nil, false
	}
	out := make([]Part, 0, len(parts))
	for _, p := range parts {
		out = append(out, Part{Type: p.Type, Text: p.Text, ImageURL: p.ImageURL.URL})
	}
	return out, true
}

func oldChatToolCalls(raw []byte) []ToolCall {
	var calls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	var out []ToolCall
	if json.Unmarshal(raw, &calls) == nil {
		for _, c := range calls {
			out = append(out, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
	}
	return out
}

func oldAnthropicBlocks(raw []byte) ([]anthropicBlock, error) {
	var bs []anthropicBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, err
	}
	var kept []anthropicBlock // the kinds the translation reads
	for _, b := range bs {
		if readBlock[b.Type] {
			kept = append(kept, b)
		}
	}
	return kept, nil
}

func oldAnthropicMessages(raw []byte) ([]anthropicWire, error) {
	var msgs []anthropicWire
	if err := json.Unmarshal(raw, &msgs); err != nil || len(msgs) == 0 {
		return nil, errAnthropicMessages
	}
	return msgs, nil
}

func oldAnthropicTools(raw []byte) ([]Tool, error) {
	var tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, err
	}
	var out []Tool
	for _, t := range tools {
		if t.Name != "" && len(t.InputSchema) > 0 {
			out = append(out, Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
		}
	}
	return out, nil
}

func oldResponsesText(raw []byte) (string, []Part, error) {
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		ImageURL json.RawMessage `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, err
	}
	var texts []string
	var images []Part
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			texts = append(texts, p.Text)
		case "input_image":
			var url string
			if json.Unmarshal(p.ImageURL, &url) == nil && url != "" {
				images = append(images, Part{Type: "image_url", ImageURL: url})
			}
		}
	}
	return strings.Join(texts, ""), images, nil
}

// oldResponsesItems is the input's items that are not zero (the zero
// item translates to nothing), each with its place.
func oldResponsesItems(raw []byte) ([]responsesItem, bool) {
	var items []responsesItem
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return nil, false
	}
	for i := range items {
		items[i].index = i
	}
	return nonZeroItems(items), true
}

// nonZeroItems is the items that are not zero (the zero item translates to
// nothing: kept or not, it is the same request).
func nonZeroItems(items []responsesItem) []responsesItem {
	var out []responsesItem
	for _, it := range items {
		if it.Type != "" || it.Role != "" || it.Content != nil || it.CallID != "" || it.Name != "" ||
			it.Namespace != "" || it.Arguments != "" || it.Output != nil {
			out = append(out, it)
		}
	}
	return out
}

func oldResponsesTools(raw []byte, namespaced map[string]namespacedTool) ([]Tool, error) {
	var tools []responsesTool
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, err
	}
	var out []Tool
	for _, t := range tools {
		if t.Type != "namespace" || t.Name == "" {
			out = appendFunction(out, t)
			continue
		}
		for _, inner := range t.Tools {
			if inner.Type != "function" || inner.Name == "" {
				continue
			}
			name := namespaceToolName(t.Name, inner.Name)
			namespaced[name] = namespacedTool{namespace: t.Name, name: inner.Name}
			inner.Name = name
			out = appendFunction(out, inner)
		}
	}
	return out, nil
}

// dumpV writes v, pointers followed and unexported fields too, maps in
// key order and nil lists apart from empty ones, to compare decodes.
func dumpV(b *strings.Builder, v reflect.Value) {
	switch v.Kind() {
	case reflect.Invalid:
		b.WriteString("<inv>")
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteString("&")
		dumpV(b, v.Elem())
	case reflect.Struct:
		b.WriteString("{")
		for i := range v.NumField() {
			fmt.Fprintf(b, "%s:", v.Type().Field(i).Name)
			dumpV(b, v.Field(i))
			b.WriteString(",")
		}
		b.WriteString("}")
	case reflect.Slice:
		if v.IsNil() {
			b.WriteString("nilslice")
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			fmt.Fprintf(b, "%q", v.Bytes())
			return
		}
		b.WriteString("[")
		for i := range v.Len() {
			dumpV(b, v.Index(i))
			b.WriteString(",")
		}
		b.WriteString("]")
	case reflect.Map:
		if v.IsNil() {
			b.WriteString("nilmap")
			return
		}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		b.WriteString("map[")
		for _, k := range keys {
			fmt.Fprintf(b, "%q:", k.String())
			dumpV(b, v.MapIndex(k))
			b.WriteString(",")
		}
		b.WriteString("]")
	case reflect.String:
		fmt.Fprintf(b, "%q", v.String())
	case reflect.Bool:
		fmt.Fprint(b, v.Bool())
	case reflect.Int, reflect.Int64, reflect.Int32:
		fmt.Fprint(b, v.Int())
	case reflect.Float64:
		fmt.Fprint(b, v.Float())
	default:
		fmt.Fprintf(b, "?%s", v.Kind())
	}
}

// dump is dumpV of x as a string.
func dump(x any) string {
	var b strings.Builder
	dumpV(&b, reflect.ValueOf(x))
	return b.String()
}

// listSeeds are lists in the shapes an agent (untrusted) may send: keys
// in other cases, escaped, twice, null; values of the wrong type; nested
// lists; unicode and invalid UTF-8; white space everywhere.
var listSeeds = []string{
	`[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}},{}]`,
	`[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}},null,{}]`,
	`[{"type":"text","text":"a"},{"type":"thinking","thinking":"t"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"x"}},{"type":"tool_use","id":"c","name":"f","input":{"a":1}},{"type":"tool_result","tool_use_id":"c","content":[{"type":"text","text":"r"}],"is_error":true},{"type":"redacted_thinking","data":"x"}]`,
	`[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"b"}]}]`,
	`[{"name":"f","description":"d","input_schema":{"type":"object"}},{"name":"g"},{}]`,
	`[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"u"},{"type":"output_text","text":"b"}]`,
	`[{"role":"user","content":"x"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"r"},{},null]`,
	`[{"type":"function","name":"f","parameters":{}},{"type":"namespace","name":"n","tools":[{"type":"function","name":"g"},{}]},{}]`,
	`[]`, `null`, `{}`, `"s"`, `1`, `[1]`, `[[]]`, `[""]`, `[null]`, `[{}]`,
	`[{"Type":"text","TEXT":"a","Role":"user","NAME":"n","Function":{"NAME":"f"}},{"t\u0079pe":"text","text":"b","r\u006fle":"user"}]`,
	`[{"type":"text","text":"a","text":null,"id":"x","id":"y"},{"type":null},{"is_error":"x"},{"function":{"name":"f"},"function":{"arguments":"a"}},{"image_url":{"url":"a"},"image_url":null}]`,
	`[ { "type" : "text" , "text" : "a\u00e9\ud83d\ude00" , "role" : "user" } ]`,
	"[{\"type\":\"text\",\"text\":\"\xff\",\"role\":\"\xfe\",\"name\":\"\xc3\"}]",
	`[{"type":"text","ſ":1,"K":2,"tool_use_ıd":"x","input_ſchema":{}}]`,
	`[{"type":"tool_use","input":null,"content":[[1]],"source":{"type":1}}]`,
}

// FuzzDialectLists checks that each list the dialects read one element at
// a time (Chat Completions' content parts and tool calls, Anthropic's
// blocks, messages and tools, Responses' content parts, items and tools)
// gives what the whole decode into the former slices gave, and refuses
// alike, for any valid JSON list (they come from a decoded body).
func FuzzDialectLists(f *testing.F) {
	for _, s := range listSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		raw = []byte(strings.TrimSpace(string(raw)))
		same := func(what string, got, gerr, want, werr any) {
			t.Helper()
			if g, w := fmt.Sprintf("%+v %v", got, gerr != nil), fmt.Sprintf("%+v %v", want, werr != nil); g != w {
				t.Fatalf("%s of %q:\n got %s\nwant %s", what, raw, g, w)
			}
		}
		if raw[0] == '[' {
			gp, gok := chatParts(raw)
			wp, wok := oldChatParts(raw)
			same("chat parts", gp, !gok, wp, !wok)
			same("chat tool calls", chatToolCalls(raw), false, oldChatToolCalls(raw), false)
			gb, gerr := blocks(raw)
			wb, werr := oldAnthropicBlocks(raw)
			same("anthropic blocks", dump(gb), gerr, dump(wb), werr)
			wt, wi, werr2 := oldResponsesText(raw)
			gs, gi, gerr2 := responsesText(raw)
			same("responses parts", fmt.Sprint(gs, gi), gerr2, fmt.Sprint(wt, wi), werr2)
		}
		var gm []anthropicWire
		gerr := anthropicMessages(raw, func(_ int, m *anthropicWire) error { gm = append(gm, *m); return nil })
		wm, werr := oldAnthropicMessages(raw)
		same("anthropic messages", dump(gm), gerr, dump(wm), werr)
		if raw[0] != 'n' { // null: no tools, not read
			gat, gerr := anthropicToolList(raw)
			wat, werr := oldAnthropicTools(raw)
			same("anthropic tools", dump(gat), gerr, dump(wat), werr)
		}
		gis, gok := responsesItems(raw)
		if !gok {
			gis = nil // not read when not ok
		}
		wis, wok := oldResponsesItems(raw)
		same("responses items", dump(nonZeroItems(gis)), !gok, dump(wis), !wok)
		gn, wn := map[string]namespacedTool{}, map[string]namespacedTool{}
		grt, gerr := responsesTools(raw, gn)
		wrt, werr := oldResponsesTools(raw, wn)
		if raw[0] != 'n' {
			same("responses tools", dump(grt), gerr, dump(wrt), werr)
			if gerr == nil {
				same("namespaced tools", dump(gn), nil, dump(wn), nil)
			}
		}
	})
}
