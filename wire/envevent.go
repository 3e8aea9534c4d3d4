package wire

// EventEnv is harnessd's own event type, not RFC 005's: one event of the
// environment's event queue (configuration events:) that fired, with what
// triggered it and what it did. Origin "daemon".
const EventEnv EventType = "env_event"

// Env event triggers (EnvEvent.Trigger).
const (
	TriggerBeforeTurn      = "before_turn"
	TriggerAfterTool       = "after_tool"
	TriggerAfter           = "after"
	TriggerResponseMatches = "response_matches"
)

// Env event effects (EnvEvent.Effect).
const (
	EffectMessage = "message"
	EffectFile    = "file"
	EffectTool    = "tool"
	EffectDeliver = "deliver"
)

// Env event deliveries (EnvEvent.Delivery): where an event's text went.
const (
	// DeliveryMidTurn: handed to the harness during the running turn,
	// over its protocol.
	DeliveryMidTurn = "mid_turn"
	// DeliveryNextMessage: appended to the next turn's message.
	DeliveryNextMessage = "next_message"
	// DeliveryWorkspace: a file effect, written into the workspace.
	DeliveryWorkspace = "workspace"
	// DeliveryToolServer: a tool effect, a call to one of the
	// environment's own tool servers.
	DeliveryToolServer = "tool_server"
)

// EnvEvent is one fired event of the environment's event queue
// (env_event; origin "daemon").
type EnvEvent struct {
	// Index is the event's 0-based position in the configuration's events.
	Index int `json:"index"`
	// Name is the event's configured name, if any.
	Name string `json:"name,omitempty"`
	// Trigger is what fired it: before_turn, after_tool, after or
	// response_matches.
	Trigger string `json:"trigger" wire:"required"`
	// Detail says what exactly fired it: the turn number, the tool call's
	// name, the delay, the pattern matched.
	Detail string `json:"detail,omitempty"`
	// Effect is what it does: message, file, tool or deliver.
	Effect string `json:"effect" wire:"required"`
	// Delivery is where the effect went: mid_turn, next_message,
	// workspace or tool_server (a tool effect whose result became the
	// text says where that went instead).
	Delivery string `json:"delivery,omitempty"`
	// Fallback says why a deliver effect went to the next turn's message
	// instead of mid-turn (the protocol cannot take it, the turn ended).
	Fallback string `json:"fallback,omitempty"`
	// Text is the message or delivered text.
	Text string `json:"text,omitempty"`
	// Path is a file effect's path, relative to the workspace.
	Path string `json:"path,omitempty"`
	// Tool names a tool effect's call: SERVER/TOOL.
	Tool string `json:"tool,omitempty"`
	// Result is a tool effect's result text.
	Result string `json:"result,omitempty"`
	// Error says why the effect failed ("" when it took effect).
	Error string `json:"error,omitempty"`
}

// EventType implements Payload.
func (*EnvEvent) EventType() EventType { return EventEnv }
