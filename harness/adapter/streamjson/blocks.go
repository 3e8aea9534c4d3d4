package streamjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/harnessd/harnessd/internal/jsonlist"
	"github.com/harnessd/harnessd/internal/jsonscan"
	"github.com/harnessd/harnessd/wire"
)

// block is one content block: text, thinking, tool_use or tool_result.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`

	index int // its place in the message's content
}

// blockFields are block's JSON names.
var blockFields = []string{"type", "text", "thinking", "id", "name", "input", "tool_use_id", "content", "is_error"}

// errNotBlocks is the error of content that is neither form.
var errNotBlocks = errors.New("content is neither a string nor a content-block array")

// eachBlock calls f with each content block of raw, a string (one text
// block) or an array of blocks, in order, reusing one block: a block f
// keeps must be copied. It decodes one element at a time, an object of
// plain keys and values without reflection (fastBlock). Decoding content
// whole into a []block made a 170-byte block and a reflective decode of
// each element however small: a line of 65,000 empty blocks ({},), 195 KB,
// allocated 47 MiB. raw must be valid JSON (it is from a decoded line).
func eachBlock(raw json.RawMessage, f func(b *block)) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var b block
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &b.Text); err != nil {
			return fmt.Errorf("%w: %w", errNotBlocks, err)
		}
		b.Type = "text"
		f(&b)
		return nil
	}
	n := 0
	var err error
	if !jsonscan.Elements(raw, func(elem []byte) bool {
		b = block{index: n}
		n++
		if string(elem) != "null" && !fastBlock(elem, &b) {
			b = block{index: b.index}
			if err = json.Unmarshal(elem, &b); err != nil {
				return false
			}
		}
		f(&b)
		return true
	}) {
		if err != nil {
			return fmt.Errorf("%w: %w", errNotBlocks, err)
		}
		return fmt.Errorf("%w: %.20s", errNotBlocks, raw)
	}
	return nil
}

// fastBlock fills b from the object elem when its keys are plain and each
// names a block field exactly (its string values without escapes, is_error
// true or false) or none (jsonlist.MayName): what json.Unmarshal makes of it.
// false (b then partly filled) leaves elem to json.Unmarshal.
func fastBlock(elem []byte, b *block) bool {
	return wire.ObjectFields(elem, func(k, v []byte) bool {
		var dst *string
		switch string(k) {
		case "type":
			dst = &b.Type
		case "text":
			dst = &b.Text
		case "thinking":
			dst = &b.Thinking
		case "id":
			dst = &b.ID
		case "name":
			dst = &b.Name
		case "tool_use_id":
			dst = &b.ToolUseID
		case "input":
			b.Input = bytes.Clone(v)
			return true
		case "content":
			b.Content = bytes.Clone(v)
			return true
		case "is_error":
			b.IsError = string(v) == "true"
			return b.IsError || string(v) == "false"
		default:
			return !jsonlist.MayName(k, blockFields...)
		}
		s, ok := wire.PlainString(v)
		*dst = s
		return ok
	})
}

// blocks returns the content blocks of raw for which keep is true, with
// their index, having checked that every block decodes (an error leaves
// nothing to act on). The others are decoded, checked and dropped.
func blocks(raw json.RawMessage, keep func(*block) bool) ([]block, error) {
	var bs []block
	err := eachBlock(raw, func(b *block) {
		if keep(b) {
			bs = append(bs, *b)
		}
	})
	if err != nil {
		return nil, err
	}
	return bs, nil
}

// contentText joins the text of tool_result content (a string or blocks);
// other block kinds are named in brackets.
func contentText(raw json.RawMessage) string {
	var s strings.Builder
	first := true
	err := eachBlock(raw, func(b *block) {
		if !first {
			s.WriteByte('\n')
		}
		first = false
		if b.Type == "text" {
			s.WriteString(b.Text)
		} else {
			s.WriteByte('[')
			s.WriteString(b.Type)
			s.WriteByte(']')
		}
	})
	if err != nil {
		return string(raw)
	}
	return s.String()
}
