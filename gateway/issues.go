package gateway

// Severity grades a problem found in captured calls.
type Severity string

// Severities: a fatal problem makes a call unusable for training (it is
// left out of the chains), a warning deserves a look, info is context.
const (
	SeverityFatal Severity = "fatal"
	SeverityWarn  Severity = "warn"
	SeverityInfo  Severity = "info"
)

// Issue codes.
const (
	IssueMissingTokenIDs  = "missing_token_ids"  // an engine answer without prompt or completion ids
	IssueMissingLogprobs  = "missing_logprobs"   // an engine answer without logprobs
	IssueLogprobNotNumber = "logprob_not_number" // a logprob that came back as a string (or other non-number)
	IssueLogprobsLength   = "logprobs_length"    // logprobs not aligned with the completion ids
	IssueTokensAsText     = "tokens_as_text"     // logprob tokens as text: --return-tokens-as-token-ids missing
	IssueTokenMismatch    = "token_mismatch"     // a token_id:N token that disagrees with token_ids
	IssueMaskedLogprob    = "masked_logprob"     // a masked position carrying a logprob
	IssueUnmaskedNoLogp   = "trainable_without_logprob"
	IssueMisaligned       = "misaligned"  // input_ids, loss_mask and logprobs of different lengths
	IssueChainBreak       = "chain_break" // a call that extends no earlier call: a new chain
	IssueSingleCall       = "single_call" // an agentic episode with one model call
	IssueCallFailed       = "call_failed" // the upstream failed or a budget refused the call
	IssueNoTrainingCalls  = "no_training_calls"
)

// Issue is one problem found on ingest or export, tied to a call when it
// concerns one.
type Issue struct {
	// Severity grades it.
	Severity Severity `json:"severity"`
	// Code names the kind of problem (Issue* constants).
	Code string `json:"code"`
	// CallIndex is the call concerned (0: the episode or a chain).
	CallIndex int `json:"call_index,omitempty"`
	// Chain is the chain concerned (0: none); chains count from 1.
	Chain int `json:"chain,omitempty"`
	// Message says what is wrong, for people.
	Message string `json:"message"`
}

// validateCall grades an engine call on ingest.
func validateCall(c *completion) []Issue {
	issues := append([]Issue(nil), c.issues...)
	if len(c.PromptIDs) == 0 || len(c.CompletionIDs) == 0 {
		issues = append(issues, Issue{Severity: SeverityFatal, Code: IssueMissingTokenIDs,
			Message: "the engine returned no prompt_token_ids or token_ids: is return_token_ids supported (vLLM, SGLang from main)?"})
	}
	switch {
	case c.Logprobs == nil && !hasCode(c.issues, IssueLogprobNotNumber):
		issues = append(issues, Issue{Severity: SeverityFatal, Code: IssueMissingLogprobs,
			Message: "the engine returned no logprobs.content"})
	case c.Logprobs != nil && len(c.Logprobs) != len(c.CompletionIDs):
		issues = append(issues, Issue{Severity: SeverityFatal, Code: IssueLogprobsLength,
			Message: "logprobs and token_ids differ in length"})
	}
	return issues
}

func hasCode(issues []Issue, code string) bool {
	for _, i := range issues {
		if i.Code == code {
			return true
		}
	}
	return false
}

func fatal(issues []Issue) bool {
	for _, i := range issues {
		if i.Severity == SeverityFatal {
			return true
		}
	}
	return false
}
