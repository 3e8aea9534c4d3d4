package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestGoSourceThroughBridge(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	addTool, err := ToolFromMCP(mcp.NewTool("sum", mcp.WithNumber("a"), mcp.WithNumber("b")))
	if err != nil {
		t.Fatal(err)
	}
	src := NewGoSource("go",
		GoTool{Tool: addTool, Handler: func(ctx context.Context, args json.RawMessage) (*mcp.CallToolResult, error) {
			var in struct{ A, B int }
			if err := json.Unmarshal(args, &in); err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			ReportProgress(ctx, 1, 2, "half")
			ReportProgress(ctx, 2, 2, "done")
			return mcp.NewToolResultText(strings.Repeat("|", in.A+in.B)), nil
		}},
		GoTool{Tool: Tool{Name: "panics"}, Handler: func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
			panic("boom")
		}},
		GoTool{Tool: Tool{Name: "ignores_ctx"}, Handler: func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
			<-block
			return mcp.NewToolResultText("late"), nil
		}},
		GoTool{Tool: Tool{Name: "nil_result"}, Handler: func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
			return nil, nil
		}},
		GoTool{Tool: Tool{Name: "fails"}, Handler: func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
			return nil, errors.New("database unavailable")
		}},
	)
	cat := newCatalog(t, CatalogOptions{}, src)
	srv := serve(t, cat, ServerOptions{CallTimeout: 300 * time.Millisecond})
	c := connect(t, srv.URL(), srv.Token())

	var mu sync.Mutex
	var progress []string
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) {
			mu.Lock()
			progress = append(progress, n.Params.AdditionalFields["message"].(string))
			mu.Unlock()
		}
	})
	req := mcp.CallToolRequest{}
	req.Params.Name = "sum"
	req.Params.Arguments = map[string]any{"a": 2, "b": 3}
	req.Params.Meta = &mcp.Meta{ProgressToken: 7}
	res, err := c.CallTool(testCtx(t), req)
	if err != nil || resultText(res) != "|||||" {
		t.Fatalf("sum = %q, %v", resultText(res), err)
	}
	mu.Lock()
	if strings.Join(progress, ",") != "half,done" {
		t.Errorf("progress = %v, want half,done", progress)
	}
	mu.Unlock()

	for name, want := range map[string]string{
		"panics":      "panicked: boom",
		"ignores_ctx": "timed out",
		"nil_result":  "returned no result",
		"fails":       "database unavailable",
	} {
		text, isErr := call(t, c, name, nil)
		if !isErr || !strings.Contains(text, want) {
			t.Errorf("%s = %q (isError %v), want an error result with %q", name, text, isErr, want)
		}
	}
	if text, _ := call(t, c, "sum", map[string]any{"a": 1, "b": 0}); text != "|" {
		t.Fatalf("bridge unusable after failures: %q", text)
	}
}
