package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// FancyInputSchema is the input schema of the fancy tool, exactly as served.
// It uses the keywords a typed decoder tends to lose ($schema, title, oneOf,
// $defs, $ref, additionalProperties) and a non-alphabetical key order.
const FancyInputSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"Fancy input","type":"object",` +
	`"$defs":{"point":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"],"additionalProperties":false}},` +
	`"properties":{"shape":{"oneOf":[{"type":"string","enum":["circle","square"]},{"$ref":"#/$defs/point"}]},` +
	`"label":{"type":"string","title":"Label","maxLength":40}},"required":["shape"],"additionalProperties":false}`

// FancyOutputSchema is the output schema of the fancy tool, exactly as served.
const FancyOutputSchema = `{"type":"object","title":"Fancy output","properties":{"shape":{},"label":{"type":"string"}},"required":["shape"]}`

// def is one tool: its definition and a handler bound to a server's state.
type def struct {
	tool    func() mcp.Tool
	handler func(st *state) server.ToolHandlerFunc
}

var catalog = map[string]def{
	"add": {
		tool: func() mcp.Tool {
			return mcp.NewTool("add", mcp.WithDescription("Add two numbers and return the sum as text."),
				mcp.WithNumber("a", mcp.Required(), mcp.Description("first addend")),
				mcp.WithNumber("b", mcp.Required(), mcp.Description("second addend")))
		},
		handler: func(*state) server.ToolHandlerFunc {
			return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				a, err := req.RequireFloat("a")
				if err != nil {
					return mcp.NewToolResultError(err.Error()), nil
				}
				b, err := req.RequireFloat("b")
				if err != nil {
					return mcp.NewToolResultError(err.Error()), nil
				}
				return mcp.NewToolResultText(strconv.FormatFloat(a+b, 'f', -1, 64)), nil
			}
		},
	},
	"echo": {
		tool: func() mcp.Tool {
			return mcp.NewTool("echo", mcp.WithDescription("Return the text unchanged."),
				mcp.WithString("text", mcp.Required()))
		},
		handler: func(*state) server.ToolHandlerFunc {
			return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(req.GetString("text", "")), nil
			}
		},
	},
	"read_file": {
		tool: func() mcp.Tool {
			return mcp.NewTool("read_file", mcp.WithDescription("Pretend to read a file (a name that collides with harness built-ins)."),
				mcp.WithString("path", mcp.Required()))
		},
		handler: func(*state) server.ToolHandlerFunc {
			return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("contents of " + req.GetString("path", "")), nil
			}
		},
	},
	"slow": {
		tool: func() mcp.Tool {
			return mcp.NewTool("slow", mcp.WithDescription("Wait, reporting progress when asked to; honours cancellation."),
				mcp.WithNumber("seconds", mcp.Required(), mcp.Description("how long to wait")),
				mcp.WithInteger("steps", mcp.Description("progress notifications to send (default 1)")))
		},
		handler: func(st *state) server.ToolHandlerFunc { return st.slow },
	},
	"crash": {
		tool: func() mcp.Tool {
			return mcp.NewTool("crash", mcp.WithDescription("Exit the tool server process at once."),
				mcp.WithInteger("code", mcp.Description("exit code (default 3)")))
		},
		handler: func(st *state) server.ToolHandlerFunc {
			return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				code := req.GetInt("code", 3)
				fmt.Fprintf(st.opts.stderr(), "testharness tools: crashing with code %d\n", code)
				st.opts.Exit(code)
				return mcp.NewToolResultError("crash: the process did not exit"), nil
			}
		},
	},
	"fancy": {
		tool: func() mcp.Tool {
			t := mcp.NewToolWithRawSchema("fancy", "A tool with a rich input schema; returns its arguments.", json.RawMessage(FancyInputSchema))
			t.Title = "Fancy"
			t.RawOutputSchema = json.RawMessage(FancyOutputSchema)
			return t
		},
		handler: func(*state) server.ToolHandlerFunc {
			return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				raw := req.Params.RawArguments
				if len(raw) == 0 {
					raw = json.RawMessage(`{}`)
				}
				var out map[string]any
				if err := json.Unmarshal(raw, &out); err != nil {
					return mcp.NewToolResultError("arguments are not an object"), nil
				}
				return mcp.NewToolResultStructured(out, string(raw)), nil
			}
		},
	},
	"grade": {
		tool: func() mcp.Tool {
			return mcp.NewTool("grade", mcp.WithDescription("Score an answer; returns JSON {\"score\": N}."),
				mcp.WithString("answer"),
				mcp.WithString("expected", mcp.Description("if set, the score is 1 for an equal answer, else 0")))
		},
		handler: func(st *state) server.ToolHandlerFunc {
			return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				score := st.opts.Score
				if exp := req.GetString("expected", ""); exp != "" {
					score = 0
					if strings.TrimSpace(req.GetString("answer", "")) == strings.TrimSpace(exp) {
						score = 1
					}
				}
				v := map[string]any{"score": score}
				b, _ := json.Marshal(v)
				return mcp.NewToolResultStructured(v, string(b)), nil
			}
		},
	},
	"count": {
		tool: func() mcp.Tool {
			return mcp.NewTool("count", mcp.WithDescription("Count calls to this tool in this process; returns the new count."))
		},
		handler: func(st *state) server.ToolHandlerFunc {
			return func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(strconv.FormatInt(st.count.Add(1), 10)), nil
			}
		},
	},
	"stats": {
		tool: func() mcp.Tool {
			return mcp.NewTool("stats", mcp.WithDescription("Report the process id and call statistics as JSON."))
		},
		handler: func(st *state) server.ToolHandlerFunc {
			return func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				st.mu.Lock()
				calls := make(map[string]int, len(st.calls))
				for k, v := range st.calls {
					calls[k] = v
				}
				st.mu.Unlock()
				v := Stats{PID: os.Getpid(), Count: st.count.Load(), Cancelled: st.cancelled.Load(), Calls: calls}
				b, _ := json.Marshal(v)
				return mcp.NewToolResultText(string(b)), nil
			}
		},
	},
}

// Stats is the JSON text the stats tool returns.
type Stats struct {
	PID       int            `json:"pid"`       // the tool server's process id
	Count     int64          `json:"count"`     // calls of count so far
	Cancelled int64          `json:"cancelled"` // slow calls that saw their cancellation
	Calls     map[string]int `json:"calls"`     // calls per tool (original names)
}

// slow waits seconds in steps, sending a progress notification after each
// step when the caller asked for progress, and stops early when cancelled.
func (st *state) slow(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	secs, err := req.RequireFloat("seconds")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	steps := max(req.GetInt("steps", 1), 1)
	var token mcp.ProgressToken
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	step := time.Duration(secs * float64(time.Second) / float64(steps))
	for i := 1; i <= steps; i++ {
		t := time.NewTimer(step)
		select {
		case <-ctx.Done():
			t.Stop()
			st.cancelled.Add(1)
			return mcp.NewToolResultError("slow: cancelled"), nil
		case <-t.C:
		}
		if token != nil {
			if srv := server.ServerFromContext(ctx); srv != nil {
				_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
					"progressToken": token, "progress": i, "total": steps, "message": fmt.Sprintf("step %d of %d", i, steps),
				})
			}
		}
	}
	return mcp.NewToolResultText(fmt.Sprintf("slept %gs", secs)), nil
}
