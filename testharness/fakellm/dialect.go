package fakellm

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// dialect is one wire API: how to read its requests and write its answers.
type dialect struct {
	name Dialect
	// parse reduces a request body to a conversation; errors mean 400.
	parse func(r *http.Request, body []byte) (*conversation, error)
	// write encodes the answer, streaming or not as the request asked.
	// An error means the client went away mid-answer.
	write func(w http.ResponseWriter, c *conversation, res *response) error
	// writeError answers an HTTP error in the dialect's error shape.
	writeError func(w http.ResponseWriter, status int, msg string)
}

// response is an answer plus the numbers every dialect reports.
type response struct {
	answer
	id           int64 // unique per response within the server's lifetime
	created      int64 // unix seconds
	inputTokens  int
	outputTokens int
	engine       *engineReply // engine mode's token ids and logprobs (chat only), or nil
}

// stopForTools is true when the answer ends in tool calls.
func (r *response) stopForTools() bool { return len(r.calls) > 0 }

func outputTokens(a answer) int {
	n := len(a.text)
	for _, c := range a.calls {
		n += len(c.name) + len(c.args)
	}
	return max(1, n/4)
}

// textParts returns the text of content given as a string or as an array
// of parts/blocks with a "text" field (other parts are skipped).
func textParts(raw json.RawMessage) []string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var parts []struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var out []string
		for _, p := range parts {
			if p.Text != nil {
				out = append(out, *p.Text)
			}
		}
		return out
	}
	return nil
}
