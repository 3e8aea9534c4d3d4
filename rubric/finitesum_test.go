package rubric

import (
	"context"
	"encoding/json"
	"math"
	"testing"
)

// TestWeightedSumIsFinite: each rubric's score is checked finite, but
// their weighted sum was not: a scorer whose output the harness controls
// (a command scorer that runs the workspace's tests prints what a planted
// conftest.py prints last; a tool that echoes the harness's number) gave
// 1.7e308 and the reward became +Inf (two such rubrics, or one of weight
// 2), and NaN with a rubric of -1.7e308 beside (+Inf + -Inf): neither is
// a JSON number, so no observation, record or export can carry it. Now
// the sum is taken exactly when the quick one is not finite, and a sum
// beyond float64's range is its largest finite value. The control: small
// scores sum as before, and one rubric of 1.7e308 keeps its score.
func TestWeightedSumIsFinite(t *testing.T) {
	two := 2.0
	score := func(scores map[string]string, specs ...Spec) float64 {
		t.Helper()
		call := func(_ context.Context, name string, _ json.RawMessage) (string, error) { return scores[name], nil }
		set, err := New(specs, Deps{CallTool: call})
		if err != nil {
			t.Fatal(err)
		}
		total, res := set.Score(context.Background(), Input{})
		for _, r := range res {
			if r.Score == nil {
				t.Fatalf("rubric %s scored nothing: %s", r.Name, r.Error)
			}
		}
		return total
	}
	tool := func(name string) Spec { return Spec{Name: name, Type: KindTool, Tool: name} }
	weighted := func(name string) Spec { s := tool(name); s.Weight = &two; return s }
	heavy := weighted("a")

	if got := score(map[string]string{"a": "0.5", "b": "0.25"}, tool("a"), tool("b")); got != 0.75 {
		t.Fatalf("control: 0.5 + 0.25 = %v", got)
	}
	if got := score(map[string]string{"a": "1.7e308"}, tool("a")); got != 1.7e308 {
		t.Fatalf("control: one rubric of 1.7e308 gave %v", got)
	}
	nan := math.NaN()
	if _, err := New([]Spec{{Name: "w", Type: KindMatch, Contains: "x", Weight: &nan}}, Deps{}); err == nil {
		t.Errorf("a weight of NaN is accepted")
	}
	for _, c := range []struct {
		name   string
		scores map[string]string
		specs  []Spec
		want   float64
	}{
		{"two of 1.7e308", map[string]string{"a": "1.7e308", "b": "1.7e308"}, []Spec{tool("a"), tool("b")}, math.MaxFloat64},
		{"1.7e308 of weight 2", map[string]string{"a": "1.7e308"}, []Spec{heavy}, math.MaxFloat64},
		{"-1.7e308 twice", map[string]string{"a": "-1.7e308", "b": "-1.7e308"}, []Spec{tool("a"), tool("b")}, -math.MaxFloat64},
		{"+Inf then -1.7e308", map[string]string{"a": "1.7e308", "b": "1.7e308", "c": "-1.7e308"}, []Spec{tool("a"), tool("b"), tool("c")}, 1.7e308},
		{"+Inf and -Inf (NaN)", map[string]string{"a": "1.7e308", "c": "-1.7e308"}, []Spec{heavy, weighted("c")}, 0},
	} {
		got := score(c.scores, c.specs...)
		if math.IsNaN(got) || math.IsInf(got, 0) || got != c.want {
			t.Errorf("%s: the reward is %v, want %v", c.name, got, c.want)
		}
	}
}
