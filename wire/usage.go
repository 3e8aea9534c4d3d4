package wire

import (
	"bytes"
	"encoding/json"
)

// TokenUsage is a model call's token usage (llm_response's usage) in the
// OpenAI spelling the gateway writes: prompt_tokens, completion_tokens,
// total_tokens. The gateway fills it from whatever its upstream reported,
// so readers (metrics, trainers) never need a provider's own spelling.
//
// A usage decoded from JSON (a harness's own llm_response, a record read
// back) keeps the object as it came and is written back unchanged, so a
// producer's own fields and spelling survive the trip; its counts are read
// from the OpenAI names only (zero when it used others, or was not an
// object).
type TokenUsage struct {
	// PromptTokens is the number of prompt (input) tokens.
	PromptTokens int `json:"prompt_tokens"`
	// CompletionTokens is the number of completion (output) tokens.
	CompletionTokens int `json:"completion_tokens"`
	// TotalTokens is their sum, or what the model reported as the total.
	TotalTokens int `json:"total_tokens"`

	raw json.RawMessage // the value as decoded, written back as is
}

// MarshalJSON writes the decoded value as it came, else the three counts.
func (u TokenUsage) MarshalJSON() ([]byte, error) {
	if u.raw != nil {
		return u.raw, nil
	}
	type plain TokenUsage
	return json.Marshal(plain(u))
}

// UnmarshalJSON keeps any JSON value (encoding/json has checked it) as it came and reads the counts of an
// object in the OpenAI spelling; other spellings leave them zero.
func (u *TokenUsage) UnmarshalJSON(b []byte) error {
	*u = TokenUsage{raw: bytes.Clone(b)}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		type plain TokenUsage
		var p plain
		if json.Unmarshal(t, &p) == nil {
			u.PromptTokens, u.CompletionTokens, u.TotalTokens = p.PromptTokens, p.CompletionTokens, p.TotalTokens
		}
	}
	return nil
}
