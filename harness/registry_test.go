package harness_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
)

func TestRegistry(t *testing.T) {
	var r harness.Registry
	if names := r.Names(); len(names) != 0 {
		t.Fatalf("zero registry names %v", names)
	}
	refused := errors.New("refused")
	f := func(cfg *harness.Config) (harness.Adapter, error) { return nil, refused }
	if err := r.Add("b", f); err != nil {
		t.Fatal(err)
	}
	if err := r.Add("a", f); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    harness.AdapterFactory
		want string
	}{{"a", f, `"a" added twice`}, {"", f, "empty name"}, {"c", nil, "no factory"}} {
		if err := r.Add(c.name, c.f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Add(%q): %v, want %q", c.name, err, c.want)
		}
	}
	if got := r.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("names %v", got)
	}
	if _, err := r.New(&harness.Config{Adapter: "a"}); !errors.Is(err, refused) {
		t.Fatalf("New(a): %v, want the factory's error", err)
	}
	if _, err := r.New(&harness.Config{Adapter: "zz"}); err == nil || !strings.Contains(err.Error(), `unknown adapter "zz" (known: [a b])`) {
		t.Fatalf("New(zz): %v", err)
	}
}
