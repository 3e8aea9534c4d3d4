package gateway

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

// budgetRecorder keeps what OnBudget reports.
type budgetRecorder struct {
	mu   sync.Mutex
	errs []*BudgetError
}

func (b *budgetRecorder) add(e *BudgetError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errs = append(b.errs, e)
}

func (b *budgetRecorder) list() []*BudgetError {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*BudgetError(nil), b.errs...)
}

// TestBudgets: each budget lets the calls it allows through and refuses the
// next in the dialect's shape, reporting which budget ran out.
func TestBudgets(t *testing.T) {
	hi := []any{user("hi")}
	cases := []struct {
		name   string
		b      Budgets
		script func(t *testing.T, gw *testGateway) // the allowed calls
		want   string
	}{
		{"episode calls", Budgets{MaxModelCalls: 2}, func(t *testing.T, gw *testGateway) {
			chatCall(t, gw, nil, hi)
			gw.SetTurn(2)
			chatCall(t, gw, nil, hi)
		}, BudgetModelCalls},
		{"turn calls", Budgets{MaxTurnModelCalls: 1}, func(t *testing.T, gw *testGateway) {
			chatCall(t, gw, nil, hi)
			gw.SetTurn(2) // a new turn starts afresh
			chatCall(t, gw, nil, hi)
		}, BudgetTurnModelCalls},
		{"episode output tokens", Budgets{MaxOutputTokens: 15}, func(t *testing.T, gw *testGateway) {
			chatCall(t, gw, nil, hi) // 9 tokens ("MOCK-AUX" and the end marker)
			gw.SetTurn(2)
			chatCall(t, gw, nil, hi) // admitted with 6 left, spends 9
		}, BudgetOutputTokens},
		{"turn output tokens", Budgets{MaxTurnOutputTokens: 5}, func(t *testing.T, gw *testGateway) {
			gw.SetTurn(1)
			chatCall(t, gw, nil, hi)
			gw.SetTurn(2)
			chatCall(t, gw, nil, hi)
		}, BudgetTurnOutputTokens},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			llm := engine(t, fakellm.Options{})
			rec := &budgetRecorder{}
			gw := startGateway(t, llm.URL(), Options{Budgets: c.b, OnBudget: rec.add})
			c.script(t, gw)
			if gw.BudgetExhausted() != nil || len(rec.list()) != 0 {
				t.Fatalf("refused too early: %v", gw.BudgetExhausted())
			}
			allowed := len(llm.Requests())
			for _, d := range []struct {
				path    string
				headers map[string]string
				body    any
				check   func(body []byte) bool
			}{
				{"/v1/chat/completions", gw.bearer(), map[string]any{"messages": hi}, func(b []byte) bool {
					var e struct{ Error struct{ Type, Code string } }
					return json.Unmarshal(b, &e) == nil && e.Error.Code == "insufficient_quota"
				}},
				{"/v1/messages", gw.anthropicHeaders(), map[string]any{"messages": hi, "max_tokens": 10}, func(b []byte) bool {
					var e struct{ Error struct{ Type string } }
					return json.Unmarshal(b, &e) == nil && e.Error.Type == "rate_limit_error"
				}},
			} {
				status, body := gw.post(t, d.path, d.headers, d.body)
				if status != 429 || !d.check(body) {
					t.Errorf("%s over budget: %d %s", d.path, status, body)
				}
			}
			if n := len(llm.Requests()); n != allowed {
				t.Errorf("refused calls reached the engine: %d, want %d", n, allowed)
			}
			errs := rec.list()
			if len(errs) != 2 || errs[0].Budget != c.want || errs[0].FailureType() != wire.FailureModelBudget {
				t.Fatalf("OnBudget got %v, want %s twice", errs, c.want)
			}
			if got := gw.BudgetExhausted(); got == nil || got.Budget != c.want || got.CallIndex != allowed+1 {
				t.Errorf("BudgetExhausted = %v", got)
			}
			last := gw.events.responses()[allowed+1]
			if last == nil || last.Status != 429 || last.Error == "" {
				t.Errorf("refusal not recorded: %+v", last)
			}
		})
	}
}

// TestOutputBudgetCapsMaxTokens: a call gets max_tokens lowered to what the
// output budgets leave.
func TestOutputBudgetCapsMaxTokens(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{Budgets: Budgets{MaxOutputTokens: 100, MaxTokens: 4096}})
	chatCall(t, gw, nil, []any{user("hi")})
	spent := len(gw.events.responses()[1].CompletionTokenIDs)
	chatCall(t, gw, nil, []any{user("hi")})
	es := llm.Requests()
	var first, second struct {
		MaxTokens int `json:"max_tokens"`
	}
	json.Unmarshal(es[0].Body, &first)
	json.Unmarshal(es[1].Body, &second)
	if first.MaxTokens != 100 || second.MaxTokens != 100-spent {
		t.Errorf("max_tokens %d then %d, want 100 then %d", first.MaxTokens, second.MaxTokens, 100-spent)
	}
}
