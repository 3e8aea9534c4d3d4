package pty

import (
	"strings"
	"testing"
	"time"
)

func TestParseOptions(t *testing.T) {
	o, err := ParseOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.Rows != DefaultRows || o.Cols != DefaultCols || o.Submit != "\r" || o.Interrupt != "\x03" ||
		o.Term != "xterm-256color" || !o.StripEcho || o.BracketedPaste != PasteAuto || o.Prompt != nil ||
		o.Quiet != DefaultQuiet || o.Settle != DefaultSettle {
		t.Fatalf("defaults %+v", o)
	}
	o, err = ParseOptions(map[string]any{
		"rows": 30, "cols": 100, "prompt": `\$ `, "ready": "Welcome", "quiet": "1.5s", "submit": "\n",
		"submit_delay": 0.2, "bracketed_paste": "always", "strip_echo": false, "interrupt": "\x1b", "env_term": "dumb",
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.Rows != 30 || o.Cols != 100 || o.Quiet != 1500*time.Millisecond || o.SubmitDelay != 200*time.Millisecond ||
		o.Submit != "\n" || o.BracketedPaste != PasteAlways || o.StripEcho || o.Interrupt != "\x1b" || o.Term != "dumb" {
		t.Fatalf("parsed %+v", o)
	}
	// The prompt must end the cursor's row up to the cursor.
	if !o.Prompt.MatchString("user$ ") || o.Prompt.MatchString("user$ typed") || !o.Ready.MatchString("x Welcome y") {
		t.Fatal("prompt not anchored at the end, or ready anchored")
	}
	if o, err := ParseOptions(map[string]any{"settle": 0}); err != nil || o.Settle != 0 {
		t.Fatalf("settle 0: %+v %v", o, err)
	}
	// With a prompt, the quiet period is off unless set.
	if o, _ := ParseOptions(map[string]any{"prompt": "> "}); o.Quiet != 0 {
		t.Fatalf("quiet %v", o.Quiet)
	}
	for v, want := range map[any]PasteMode{true: PasteAuto, false: PasteNever, "never": PasteNever, "auto": PasteAuto} {
		if o, err := ParseOptions(map[string]any{"bracketed_paste": v}); err != nil || o.BracketedPaste != want {
			t.Errorf("bracketed_paste %v: %v %v", v, o, err)
		}
	}
	for _, c := range []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"promt": "> "}, `unknown key "promt"`},
		{map[string]any{"rows": "many"}, "harness.options.rows"},
		{map[string]any{"rows": 70000}, "harness.options.rows"},
		{map[string]any{"prompt": "("}, "harness.options.prompt"},
		{map[string]any{"ready": "["}, "harness.options.ready"},
		{map[string]any{"quiet": "soon"}, "quiet"},
		{map[string]any{"quiet": "-1s"}, "negative"},
		{map[string]any{"settle": "-1s"}, "negative"},
		{map[string]any{"bracketed_paste": "sometimes"}, "bracketed_paste"},
		{map[string]any{"interrupt": ""}, "interrupt"},
		{map[string]any{"strip_echo": "yes"}, "harness.options.strip_echo"},
	} {
		if _, err := ParseOptions(c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.opts, err, c.want)
		}
	}
}
