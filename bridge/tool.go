package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// Tool is one upstream tool with its JSON kept raw, so that schemas pass
// through the bridge byte for byte: every keyword, key order and value is
// kept. The Server's encoder (encoding/json, inside mcp-go) compacts
// whitespace and escapes <, > and & as \u003c, \u003e, \u0026, so an
// upstream that already sends compact, escaped JSON (any encoding/json
// server, e.g. mcp-go) is reproduced exactly and a pretty-printing one
// gets the equivalent compact form.
//
// Annotations, Meta, Icons and Execution are re-served through mcp-go's
// types: their known fields pass, unknown keys of annotations are dropped.
type Tool struct {
	// Name is the tool's name at its source; Title and Description are
	// passed through.
	Name, Title, Description string
	// InputSchema and OutputSchema are exactly as the upstream sent them;
	// OutputSchema may be empty.
	InputSchema, OutputSchema json.RawMessage
	// Annotations and Meta (the tool's _meta) are optional and passed through.
	Annotations, Meta json.RawMessage
	// Icons and Execution are optional and passed through.
	Icons, Execution json.RawMessage
}

// wireTool is a tool definition as it appears in a tools/list result.
type wireTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
	Icons        json.RawMessage `json:"icons,omitempty"`
	Execution    json.RawMessage `json:"execution,omitempty"`
}

// DecodeTool decodes one tool definition of a tools/list result, keeping
// schemas and the other nested objects as raw JSON. JSON null counts as
// absent.
func DecodeTool(raw json.RawMessage) (Tool, error) {
	var w wireTool
	if err := json.Unmarshal(raw, &w); err != nil {
		return Tool{}, fmt.Errorf("%w: %v", ErrInvalidTool, err)
	}
	if w.Name == "" {
		return Tool{}, fmt.Errorf("%w: a tool has no name", ErrInvalidTool)
	}
	t := Tool{Name: w.Name, Title: w.Title, Description: w.Description,
		InputSchema: orNil(w.InputSchema), OutputSchema: orNil(w.OutputSchema),
		Annotations: orNil(w.Annotations), Meta: orNil(w.Meta),
		Icons: orNil(w.Icons), Execution: orNil(w.Execution)}
	if len(t.InputSchema) > 0 && t.InputSchema[0] != '{' {
		return Tool{}, fmt.Errorf("%w: tool %q: inputSchema is not an object", ErrInvalidTool, w.Name)
	}
	if len(t.OutputSchema) > 0 && t.OutputSchema[0] != '{' {
		return Tool{}, fmt.Errorf("%w: tool %q: outputSchema is not an object", ErrInvalidTool, w.Name)
	}
	return t, nil
}

// ToolFromMCP converts a tool built with mcp-go (mcp.NewTool and friends),
// e.g. for a GoTool.
func ToolFromMCP(t mcp.Tool) (Tool, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return Tool{}, fmt.Errorf("%w: %v", ErrInvalidTool, err)
	}
	return DecodeTool(b)
}

func orNil(r json.RawMessage) json.RawMessage {
	if len(r) == 0 || bytes.Equal(r, []byte("null")) {
		return nil
	}
	return r
}

// defaultInputSchema is served for a tool that came without one (MCP
// requires an input schema).
var defaultInputSchema = json.RawMessage(`{"type":"object"}`)

// mcpTool builds the tool the Server re-serves under the name served. The
// schemas are attached raw (the typed schema fields stay zero, as mcp-go's
// Tool.MarshalJSON requires). Optional parts that do not decode into
// mcp-go's types are dropped and reported in the returned warnings.
func (t Tool) mcpTool(served string) (mcp.Tool, []string) {
	out := mcp.Tool{Name: served, Title: t.Title, Description: t.Description}
	out.RawInputSchema = t.InputSchema
	if len(out.RawInputSchema) == 0 {
		out.RawInputSchema = defaultInputSchema
	}
	if len(t.OutputSchema) > 0 {
		out.RawOutputSchema = t.OutputSchema
	}
	var warn []string
	if len(t.Annotations) > 0 {
		if err := json.Unmarshal(t.Annotations, &out.Annotations); err != nil {
			out.Annotations = mcp.ToolAnnotation{}
			warn = append(warn, "annotations dropped: "+err.Error())
		}
	}
	if len(t.Meta) > 0 {
		m := &mcp.Meta{}
		if err := json.Unmarshal(t.Meta, m); err != nil {
			warn = append(warn, "_meta dropped: "+err.Error())
		} else {
			out.Meta = m
		}
	}
	if len(t.Icons) > 0 {
		if err := json.Unmarshal(t.Icons, &out.Icons); err != nil {
			out.Icons = nil
			warn = append(warn, "icons dropped: "+err.Error())
		}
	}
	if len(t.Execution) > 0 {
		e := &mcp.ToolExecution{}
		if err := json.Unmarshal(t.Execution, e); err != nil {
			warn = append(warn, "execution dropped: "+err.Error())
		} else {
			out.Execution = e
		}
	}
	return out, warn
}
