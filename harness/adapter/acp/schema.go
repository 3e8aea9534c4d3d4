package acp

import "encoding/json"

// ProtocolVersion is the ACP version the adapter speaks.
const ProtocolVersion = 1

// ClientVersion is the version harnessd reports in clientInfo.
var ClientVersion = "0.0.0"

// The wire shapes of ACP v1 the adapter sends and reads. Fields it does not
// use are left out; decoding ignores them.

type initializeParams struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities clientCapabilities `json:"clientCapabilities"`
	ClientInfo         implementation     `json:"clientInfo"`
}

type clientCapabilities struct {
	FS       fsCapabilities `json:"fs"`
	Terminal bool           `json:"terminal"`
}

type fsCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type initializeResult struct {
	ProtocolVersion   int `json:"protocolVersion"`
	AgentCapabilities struct {
		// LoadSession says the agent takes session/load: a fork's
		// sibling opens its parent's session from its copy of HOME.
		LoadSession     bool `json:"loadSession"`
		MCPCapabilities struct {
			HTTP bool `json:"http"`
			SSE  bool `json:"sse"`
		} `json:"mcpCapabilities"`
		// Meta holds vendor capabilities: claude-agent-acp's
		// claudeCode.promptQueueing says a session/prompt sent during a
		// turn is queued into it (harness.Deliverer).
		Meta struct {
			ClaudeCode struct {
				PromptQueueing bool `json:"promptQueueing"`
			} `json:"claudeCode"`
		} `json:"_meta"`
	} `json:"agentCapabilities"`
	AuthMethods []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"authMethods"`
	AgentInfo map[string]any `json:"agentInfo"`
}

// nameValue is ACP's form of headers and environment variables: a list of
// these, not a map.
type nameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type httpMCPServer struct {
	Type    string      `json:"type"`
	Name    string      `json:"name"`
	URL     string      `json:"url"`
	Headers []nameValue `json:"headers"`
}

// stdioMCPServer is the untagged default variant (no type field).
type stdioMCPServer struct {
	Name    string      `json:"name"`
	Command string      `json:"command"`
	Args    []string    `json:"args"`
	Env     []nameValue `json:"env"`
}

type newSessionParams struct {
	Cwd        string `json:"cwd"`
	MCPServers []any  `json:"mcpServers"`
}

// loadSessionParams are session/load's: a session the agent kept.
type loadSessionParams struct {
	SessionID  string `json:"sessionId"`
	Cwd        string `json:"cwd"`
	MCPServers []any  `json:"mcpServers"`
}

type sessionMode struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type newSessionResult struct {
	SessionID string `json:"sessionId"`
	Modes     *struct {
		CurrentModeID  string        `json:"currentModeId"`
		AvailableModes []sessionMode `json:"availableModes"`
	} `json:"modes"`
}

type setModeParams struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
}

type authenticateParams struct {
	MethodID string `json:"methodId"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type promptParams struct {
	SessionID string      `json:"sessionId"`
	Prompt    []textBlock `json:"prompt"`
}

type promptResult struct {
	StopReason string          `json:"stopReason"`
	Usage      json.RawMessage `json:"usage"`
	Meta       json.RawMessage `json:"_meta"`
}

type cancelParams struct {
	SessionID string `json:"sessionId"`
}

// Stop reasons of session/prompt.
const (
	StopEndTurn   = "end_turn"
	StopCancelled = "cancelled"
)
