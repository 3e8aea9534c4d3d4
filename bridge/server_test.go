package bridge

import (
	"slices"
	"testing"
)

func TestListAndCallThroughBridge(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	c := connect(t, f.srv.URL(), f.srv.Token())
	got := toolNames(t, c)
	want := []string{"add", "count", "crash", "echo", "env_read_file", "fancy", "slow", "stats"}
	if !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	if text, isErr := call(t, c, "add", map[string]any{"a": 2, "b": 3}); text != "5" || isErr {
		t.Fatalf("add(2,3) = %q (isError %v), want 5", text, isErr)
	}
}
