package gateway

import (
	"fmt"

	"github.com/harnessd/harnessd/wire"
)

// Budget names, as BudgetError.Budget reports them (the configuration's keys).
const (
	BudgetModelCalls       = "max_model_calls"
	BudgetOutputTokens     = "max_output_tokens"
	BudgetTurnModelCalls   = "max_turn_model_calls"
	BudgetTurnOutputTokens = "max_turn_output_tokens"
)

// BudgetError is a call refused because a budget ran out. The session ends
// the turn with a terminal observation of FailureType.
type BudgetError struct {
	// Budget names the budget that ran out (BudgetModelCalls, ...).
	Budget string
	// Limit is the budget's size, Used what had been spent.
	Limit, Used int
	// Turn is the turn of the refused call, CallIndex its index.
	Turn, CallIndex int
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("model budget %s exhausted (%d of %d used) at call %d in turn %d",
		e.Budget, e.Used, e.Limit, e.CallIndex, e.Turn)
}

// FailureType is the terminal observation's error_type for a budget refusal.
func (e *BudgetError) FailureType() wire.FailureType { return wire.FailureModelBudget }

// admission is a call's place in the episode: its index and turn, the
// sampling pin it is sent under (nil: none), and either a refusal or the
// max_tokens cap it gets (0: none).
type admission struct {
	index, turn int
	pin         *Sampling
	refused     *BudgetError
	maxTokens   int
}

// admit numbers a call and checks it against the budgets, counting it when
// it may go ahead. Output tokens are checked at admission: concurrent calls
// admitted together may together overshoot by what their caps allow.
func (g *Gateway) admit() admission {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.next++
	a := admission{index: g.next, turn: g.turn, pin: g.sampling}
	b := g.opts.Budgets
	refuse := func(name string, limit, used int) bool {
		if limit > 0 && used >= limit {
			a.refused = &BudgetError{Budget: name, Limit: limit, Used: used, Turn: a.turn, CallIndex: a.index}
			return true
		}
		return false
	}
	if refuse(BudgetModelCalls, b.MaxModelCalls, g.usage.calls) ||
		refuse(BudgetTurnModelCalls, b.MaxTurnModelCalls, g.turnUse.calls) ||
		refuse(BudgetOutputTokens, b.MaxOutputTokens, g.usage.outputTokens) ||
		refuse(BudgetTurnOutputTokens, b.MaxTurnOutputTokens, g.turnUse.outputTokens) {
		if g.budget == nil {
			g.budget = a.refused
		}
		return a
	}
	g.usage.calls++
	g.turnUse.calls++
	a.maxTokens = b.MaxTokens
	lower := func(limit, used int) {
		if limit > 0 && (a.maxTokens == 0 || limit-used < a.maxTokens) {
			a.maxTokens = limit - used
		}
	}
	lower(b.MaxOutputTokens, g.usage.outputTokens)
	lower(b.MaxTurnOutputTokens, g.turnUse.outputTokens)
	return a
}

// spend counts a call's completion tokens against the output budgets of
// the turn it was admitted in.
func (g *Gateway) spend(turn, tokens int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.usage.outputTokens += tokens
	if turn == g.turn {
		g.turnUse.outputTokens += tokens
	}
}
