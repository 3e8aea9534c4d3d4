package acp

import (
	"bytes"
	"encoding/json"

	"github.com/harnessd/harnessd/internal/jsonlist"
	"github.com/harnessd/harnessd/internal/jsonscan"
	"github.com/harnessd/harnessd/wire"
)

// contentTexts reads a tool call's content, a list of {"type":"content",
// "content":{"type":"text","text":...}} and other items (diffs,
// terminals): the texts of its text items, and whether it is a non-empty
// list. Only the items of type "content" are decoded; the others are
// scanned for their type. Decoding the list whole into a slice of structs
// made one of each element however small: 195 KB of empty items ({},)
// allocated 16 MiB. As that decode did, an item that does not decode (a
// number, a type that is not a string) leaves no texts.
func contentTexts(content json.RawMessage) (texts []string, items bool) {
	content = bytes.TrimSpace(content)
	if len(content) == 0 || content[0] != '[' {
		return nil, false
	}
	var p contentItem // one for all: a closure's captures escape
	ok := jsonscan.Elements(content, func(item []byte) bool {
		items = true
		text, ok := p.text(item)
		if ok && text != nil {
			texts = append(texts, *text)
		}
		return ok
	})
	if !ok {
		return nil, items
	}
	return texts, items
}

// contentItem is the part of a content item read.
type contentItem struct {
	Type    string          `json:"type"`
	Content json.RawMessage `json:"content"`
}

// text decodes the content item into p and returns its text (nil when it
// has none), and false when the item does not decode as an item.
func (p *contentItem) text(item []byte) (*string, bool) {
	*p = contentItem{}
	fast := string(item) == "null" || wire.ObjectFields(item, func(k, v []byte) bool {
		switch {
		case string(k) == "type":
			s, ok := wire.PlainString(v)
			p.Type = s
			return ok
		case string(k) == "content":
			p.Content = v
			return true
		}
		return !jsonlist.MayName(k, "type", "content")
	})
	if !fast {
		*p = contentItem{}
		if json.Unmarshal(item, p) != nil {
			return nil, false
		}
	}
	if p.Type != "content" {
		return nil, true
	}
	var b struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(p.Content, &b) == nil && b.Type == "text" {
		return &b.Text, true
	}
	return nil, true
}
