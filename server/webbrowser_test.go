package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/rubric"
)

// TestWebConsoleInBrowser drives the console in headless Chromium: it opens
// /web with the API token, starts a session from the chat box, runs a turn
// that calls a tool and is scored, sees the tool call and the reward, then
// runs a turn whose harness prints a script tag and checks it shows as text
// and runs nothing, and that the page fits a narrow window. It saves a
// screenshot to bin/web-console.png.
func TestWebConsoleInBrowser(t *testing.T) {
	chromium := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		testbin.Missing(t, "chromium is not installed (make test installs it under CI=true: apt-get install chromium)")
	}
	bin := testbin.Path(t, "testharness")
	records := t.TempDir()
	cfg := &config.Config{
		Name:      "web-env",
		Harness:   config.HarnessConfig{Config: harness.Config{Command: []string{bin, "agent"}, StopGrace: units.Duration(200 * time.Millisecond)}},
		Tools:     []config.ToolConfig{{Name: "calc", Command: []string{bin, "tools"}}},
		Hide:      []string{"grade"},
		Rubrics:   []rubric.Spec{{Name: "says-five", Type: "match", Pattern: `\b5\b`}},
		Workspace: config.WorkspaceConfig{Root: t.TempDir()},
		RecordDir: records,
	}
	ts := start(t, Options{Config: cfg, APIToken: "console-token", MaxSessions: 2})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 1000), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	var mu sync.Mutex
	var dialogs, problems []string
	err := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			dialogs = append(dialogs, ev.Message)
			go chromedp.Call(bctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == "error" || ev.Type == "warning" {
				problems = append(problems, "console."+string(ev.Type))
			}
		}
	})
	if err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return v
	}
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	step("opening /web and starting an episode from the chat box",
		chromedp.Navigate(ts.url+"/web?token=console-token"),
		chromedp.WaitVisible("#sessions"),
		chromedp.Click("#chat-reset"),
		chromedp.WaitEnabled("#chat-send"))
	step("a turn that calls a tool",
		chromedp.SetValue("#chat-input", `tool add {"a":2,"b":3}`),
		chromedp.Click("#chat-send"),
		chromedp.WaitVisible(`article[data-turn="1"] .obs-reward`))
	if name, args := text(`article[data-turn="1"] .tool-name`), text(`article[data-turn="1"] .tool-args`); name != "add" || !strings.Contains(args, `"a": 2`) {
		t.Errorf("tool call shown as %q %q, want add with its arguments", name, args)
	}
	if got := text(`article[data-turn="1"] .item.tool .badge.bridge`); got != "bridge-side" {
		t.Errorf("the bridge's record of the call is marked %q, want bridge-side", got)
	}
	if got := text(`article[data-turn="1"] .obs-reward`); got != "reward 1" {
		t.Errorf("turn 1's reward shows %q, want reward 1", got)
	}
	step("a turn whose harness prints a script tag",
		chromedp.WaitEnabled("#chat-send"),
		chromedp.SetValue("#chat-input", `reply <script>alert(1)</script>`),
		chromedp.Click("#chat-send"),
		chromedp.WaitVisible(`article[data-turn="2"] .obs-reward`))
	scripts, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#timeline script").length`))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(`article[data-turn="2"] .harness-text`); got != "<script>alert(1)</script>" || scripts != 0 {
		t.Errorf("harness text shows %q with %d script elements, want the literal text and none", got, scripts)
	}
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	step("a narrow window", chromedp.EmulateViewport(400, 800))
	overflow, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > document.documentElement.clientWidth`))
	if err != nil {
		t.Fatal(err)
	}
	if overflow {
		t.Error("the page scrolls sideways in a 400 px window")
	}
	mu.Lock()
	if len(dialogs) > 0 || len(problems) > 0 {
		t.Errorf("dialogs %q, console problems %q", dialogs, problems)
	}
	mu.Unlock()
	dir := os.Getenv("HARNESSD_BIN_DIR")
	if dir == "" {
		dir = filepath.Join("..", "bin")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "web-console.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
}
