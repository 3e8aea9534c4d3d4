package wire

import "fmt"

// Doors a Divergence can name.
const (
	// DoorModel is the model gateway: a model call unlike the recorded one.
	DoorModel = "model"
	// DoorTool is the tool bridge: a tool call unlike the recorded one.
	DoorTool = "tool"
)

// Divergence is where a replayed fork left its parent's record: a model
// request or a tool call different from the one recorded at the same place.
// The gateway and the bridge report it (their OnDivergence options); the
// session fails the fork with it. It is an error.
type Divergence struct {
	// Door is DoorModel or DoorTool.
	Door string `json:"door"`
	// Index is the recorded call it was matched against: the model call's
	// call index, or the tool call's 1-based position in the record.
	Index int `json:"index"`
	// Turn is the recorded call's turn (0: not known, as for tool calls).
	Turn int `json:"turn,omitempty"`
	// Field names what differed (for a model call: dialect, stream, model,
	// tools, tool_choice, sampling, messages or messages[i]; for a tool
	// call: name or arguments).
	Field string `json:"field"`
	// Want and Got describe the recorded and the new value: short
	// excerpts or digests, never whole conversations.
	Want string `json:"want"`
	Got  string `json:"got"`
}

// Error says where and how the replay diverged.
func (d *Divergence) Error() string {
	return fmt.Sprintf("replay diverged at %s call %d: %s: recorded %s, got %s", d.Door, d.Index, d.Field, d.Want, d.Got)
}
