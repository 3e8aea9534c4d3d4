package gateway

import (
	"net/http"

	"github.com/harnessd/harnessd/gateway/dialect"
)

// Dialect names an agent-side wire API (see package dialect).
type Dialect = dialect.Name

// The dialects the gateway speaks to agents.
const (
	// DialectChat is OpenAI Chat Completions (OpenCode, Goose, Qwen Code, pi).
	DialectChat = dialect.Chat
	// DialectResponses is OpenAI Responses (Codex).
	DialectResponses = dialect.Responses
	// DialectAnthropic is Anthropic Messages (Claude Code).
	DialectAnthropic = dialect.Anthropic
	// DialectGemini is Google's generateContent (Gemini CLI).
	DialectGemini = dialect.Gemini
)

// failure is an error the agent gets, in its dialect's shape.
type failure = dialect.Failure

const (
	failInvalid     = dialect.FailInvalid
	failAuth        = dialect.FailAuth
	failNotFound    = dialect.FailNotFound
	failMethod      = dialect.FailMethod
	failTooLarge    = dialect.FailTooLarge
	failBudget      = dialect.FailBudget
	failRateLimit   = dialect.FailRateLimit
	failUpstream    = dialect.FailUpstream
	failUnavailable = dialect.FailUnavailable
	failTimeout     = dialect.FailTimeout
)

// writeJSON answers v as a JSON body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	return dialect.WriteJSON(w, status, v)
}
