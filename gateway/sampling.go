package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/harnessd/harnessd/wire"
)

// Sampling is the sampling a trainer pins for an episode's engine calls, in
// place of whatever the agent asks for: agents send their own temperature,
// top_p, penalties, logit_bias, …, which makes the behaviour policy differ
// from the one being trained and the captured logprobs wrong for it.
//
// With a Sampling set (Options.Sampling, SetSampling) every engine call is
// sent:
//
//   - the pinned fields (a nil field is not pinned) in place of the agent's;
//   - none of the agent's own temperature, top_p, top_k, min_p or seed that
//     is not pinned (the engine's default applies), unless allowed;
//   - the agent's max_tokens when max_tokens is not pinned (it bounds the
//     length, not the distribution), capped as always;
//   - none of the fields that distort sampling (DistortingFields: logit_bias,
//     guided decoding, n/best_of, penalties, …), unless allowed;
//   - the agent's stop sequences unless StripStop.
//
// Field names are Chat Completions' (the engine's); each dialect's own
// names (Anthropic's stop_sequences, Gemini's topK, presencePenalty, …) are
// translated to them first. What the agent asked, what was sent, what was
// stripped and where the sent sampling differs from the pin are recorded
// per call (ExportCall).
type Sampling struct {
	// Temperature, TopP, TopK, MinP, Seed and MaxTokens are the pinned
	// values; nil leaves a field unpinned.
	Temperature *float64 `yaml:"temperature" json:"temperature,omitempty"`
	TopP        *float64 `yaml:"top_p" json:"top_p,omitempty"`
	TopK        *int     `yaml:"top_k" json:"top_k,omitempty"`
	MinP        *float64 `yaml:"min_p" json:"min_p,omitempty"`
	Seed        *int64   `yaml:"seed" json:"seed,omitempty"`
	MaxTokens   *int     `yaml:"max_tokens" json:"max_tokens,omitempty"`
	// Allow lists the agent's fields passed on as it sent them: an unpinned
	// temperature, top_p, top_k, min_p or seed, or one of DistortingFields
	// (not n, which is always dropped: one choice per call).
	Allow []string `yaml:"allow" json:"allow,omitempty"`
	// StripStop strips the agent's stop sequences (stop, stop_token_ids)
	// too.
	StripStop bool `yaml:"strip_stop" json:"strip_stop,omitempty"`
}

// shapingFields are the fields Sampling pins that shape the distribution;
// the agent's are dropped when not pinned (unless allowed).
var shapingFields = []string{"temperature", "top_p", "top_k", "min_p", "seed"}

// DistortingFields are the Chat Completions (vLLM, SGLang) request fields
// that make the engine sample from something other than the policy's
// distribution, or pick among samples: stripped from every call under a
// Sampling unless it allows them.
var DistortingFields = []string{
	"logit_bias", "n", "best_of", "use_beam_search", "length_penalty",
	"presence_penalty", "frequency_penalty", "repetition_penalty",
	"typical_p", "min_tokens", "ignore_eos", "bad_words", "allowed_token_ids",
	"response_format", "guided_json", "guided_regex", "guided_choice", "guided_grammar",
	"guided_whitespace_pattern", "guided_decoding_backend", "structured_outputs",
	"regex", "json_schema", "ebnf", "logits_processors",
}

// stopFields are the stop sequences StripStop strips.
var stopFields = []string{"stop", "stop_token_ids"}

// injected are the fields the gateway sets itself on every engine call;
// they are never the pin's nor the agent's.
var injected = []string{"logprobs", "return_token_ids", "stream", "model"}

// Validate checks the pin: values in range, allowed fields known and not
// pinned at once.
func (s *Sampling) Validate() error {
	if s == nil {
		return nil
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if v := s.Temperature; v != nil && *v < 0 {
		bad("temperature %v: must not be negative", *v)
	}
	if v := s.TopP; v != nil && (*v <= 0 || *v > 1) {
		bad("top_p %v: want (0, 1]", *v)
	}
	if v := s.MinP; v != nil && (*v < 0 || *v > 1) {
		bad("min_p %v: want [0, 1]", *v)
	}
	if v := s.TopK; v != nil && *v < -1 {
		bad("top_k %d: want -1 (off) or more", *v)
	}
	if v := s.MaxTokens; v != nil && *v <= 0 {
		bad("max_tokens %d: must be positive", *v)
	}
	pinned := s.fields()
	for _, f := range s.Allow {
		switch {
		case f == "n":
			bad("allow: n is always dropped (the gateway asks for one choice)")
		case f == "max_tokens":
			bad("allow: max_tokens is kept whenever it is not pinned")
		case slices.Contains(stopFields, f):
			if s.StripStop {
				bad("allow: %s with strip_stop: give one or the other", f)
			} else {
				bad("allow: %s is kept unless strip_stop", f)
			}
		case pinned[f] != nil:
			bad("allow: %s is pinned", f)
		case !slices.Contains(shapingFields, f) && !slices.Contains(DistortingFields, f):
			bad("allow: %q is not a sampling field the gateway strips (%s, %s)", f,
				strings.Join(shapingFields, ", "), strings.Join(DistortingFields, ", "))
		}
	}
	return errors.Join(errs...)
}

// Merge returns s with the fields over sets replacing its own: a reset's
// override of the configured pin. Allow and StripStop are replaced when
// over gives them (Allow as a non-nil list).
func (s *Sampling) Merge(over *Sampling) *Sampling {
	if over == nil {
		return s
	}
	out := Sampling{}
	if s != nil {
		out = *s
	}
	if over.Temperature != nil {
		out.Temperature = over.Temperature
	}
	if over.TopP != nil {
		out.TopP = over.TopP
	}
	if over.TopK != nil {
		out.TopK = over.TopK
	}
	if over.MinP != nil {
		out.MinP = over.MinP
	}
	if over.Seed != nil {
		out.Seed = over.Seed
	}
	if over.MaxTokens != nil {
		out.MaxTokens = over.MaxTokens
	}
	if over.Allow != nil {
		out.Allow = over.Allow
	}
	out.StripStop = out.StripStop || over.StripStop
	return &out
}

// fields returns the pinned values as JSON, by Chat Completions name.
func (s *Sampling) fields() map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	if s == nil {
		return out
	}
	num := func(k string, v any) {
		b, _ := json.Marshal(v)
		out[k] = b
	}
	if s.Temperature != nil {
		num("temperature", *s.Temperature)
	}
	if s.TopP != nil {
		num("top_p", *s.TopP)
	}
	if s.TopK != nil {
		num("top_k", *s.TopK)
	}
	if s.MinP != nil {
		num("min_p", *s.MinP)
	}
	if s.Seed != nil {
		num("seed", *s.Seed)
	}
	if s.MaxTokens != nil {
		num("max_tokens", *s.MaxTokens)
	}
	return out
}

// Pinned returns the pinned fields as a JSON object by Chat Completions
// name (nil for no pin): what the engine is sent for each of them.
func (s *Sampling) Pinned() json.RawMessage {
	if s == nil {
		return nil
	}
	b, _ := json.Marshal(s.fields())
	return b
}

// pin applies s to an engine request's fields (max_tokens already folded,
// pinned and capped by engineBody) and returns the agent's fields it
// stripped and those it replaced with pinned values, sorted.
func (s *Sampling) pin(up map[string]json.RawMessage) (stripped, overridden []string) {
	pinned := s.fields()
	allowed := func(k string) bool { return slices.Contains(s.Allow, k) }
	drop := func(k string) {
		if _, ok := up[k]; ok {
			delete(up, k)
			stripped = append(stripped, k)
		}
	}
	for _, k := range shapingFields {
		if pinned[k] == nil && !allowed(k) {
			drop(k)
		}
	}
	for _, k := range DistortingFields {
		if !allowed(k) {
			drop(k)
		}
	}
	if s.StripStop {
		for _, k := range stopFields {
			drop(k)
		}
	}
	for k, v := range pinned {
		if k == "max_tokens" {
			continue
		}
		if _, ok := up[k]; ok {
			overridden = append(overridden, k)
		}
		up[k] = v
	}
	sort.Strings(stripped)
	sort.Strings(overridden)
	return stripped, overridden
}

// differs lists the sampling fields of an engine request (up) whose value
// is not the pin's: a pinned field sent otherwise (a max_tokens lowered to
// what a budget leaves), or a field sent that the pin does not set (an
// allowed one, a stop sequence). The agent's max_tokens, kept when it is
// not pinned, and the gateway's injections are not differences.
func (s *Sampling) differs(up map[string]json.RawMessage) []string {
	pinned := s.fields()
	var out []string
	for k, want := range pinned {
		if !sameJSON(up[k], want) {
			out = append(out, k)
		}
	}
	for k := range up {
		if pinned[k] != nil || slices.Contains(injected, k) || k == "max_tokens" || !isSamplingField(k) {
			continue
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// isSamplingField reports whether an engine request field is one a pin
// decides: shaping, distorting or stop.
func isSamplingField(k string) bool {
	return slices.Contains(shapingFields, k) || slices.Contains(DistortingFields, k) || slices.Contains(stopFields, k)
}

// sameJSON compares two JSON values, numbers by value (0.70 is 0.7).
func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b)) {
		return true
	}
	if len(a) > wire.PlainLimit || len(b) > wire.PlainLimit {
		// The agent's bytes, decoded into Go values, would cost tens of
		// times their size; a sampling value that large differs.
		return false
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// Calls of the process's gateways under a sampling pin (PinnedCalls).
var pinnedCalls, strippedCalls, differingCalls atomic.Uint64

// countSampling counts a call's sampling in the process's counters.
func countSampling(sm sampled) {
	if !sm.pinned {
		return
	}
	pinnedCalls.Add(1)
	if len(sm.stripped) > 0 {
		strippedCalls.Add(1)
	}
	if len(sm.differs) > 0 {
		differingCalls.Add(1)
	}
}

// PinnedCalls returns how many engine calls of the process's gateways were
// sent under a sampling pin, how many of them had fields of the agent's
// stripped, and how many were sent sampling otherwise than pinned
// (ExportCall.SamplingDiffers).
func PinnedCalls() (pinned, stripped, differing uint64) {
	return pinnedCalls.Load(), strippedCalls.Load(), differingCalls.Load()
}
