package episode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/renameio/v2"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/recordfile"
	"github.com/harnessd/harnessd/wire"
)

// modelCloseTimeout bounds how long closing an episode's gateway waits for
// calls in flight (the harness tree is already gone by then).
const modelCloseTimeout = 5 * time.Second

// modelDoor is an episode's model gateway and the session's view of it.
type modelDoor struct {
	gw  *gateway.Gateway
	url string // the gateway's root, http://HOST:PORT

	mu      sync.Mutex
	cancel  context.CancelCauseFunc // the running turn's, nil between turns
	refused *gateway.BudgetError    // the first refusal of the running turn
	closed  bool
}

// refuse is the gateway's OnBudget: it ends the running turn.
func (d *modelDoor) refuse(err *gateway.BudgetError) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cancel == nil {
		return // a call between turns: recorded in the events, ends no turn
	}
	if d.refused == nil {
		d.refused = err
	}
	d.cancel(err)
}

// openModel starts the episode's model gateway when harness.model.url is
// set: the upstream gets the real key (read from the daemon's environment
// now), the agent will get the gateway's URL and per-episode key.
func (ep *Episode) openModel() error {
	s := ep.env
	m := &s.Config.Harness.Model
	if !m.Enabled() {
		return nil
	}
	root := m.Endpoint()
	up := gateway.Upstream{Kind: gateway.UpstreamKind(m.UpstreamKind()), Model: m.Name, Timeout: m.Timeout.D()}
	if up.Kind == gateway.UpstreamEngine {
		up.URL = root.OpenAIBase()
	} else {
		up.URL = root.Root
		up.Dialect = gateway.Dialect(m.Dialect)
		if up.Dialect == "" {
			up.Dialect = gateway.Dialect(config.DefaultModelDialect)
		}
	}
	if k := m.APIKeyEnv; k != "" {
		v, ok := os.LookupEnv(k)
		if !ok || v == "" {
			return fmt.Errorf("harness.model.api_key_env: %s is not set in harnessd's environment", k)
		}
		up.APIKey = v
	}
	e := &s.Config.Episode
	d := &modelDoor{}
	gw, err := gateway.New(gateway.Options{
		EpisodeID: ep.ID(),
		Upstream:  up,
		Budgets: gateway.Budgets{
			MaxModelCalls: e.MaxModelCalls, MaxOutputTokens: e.MaxOutputTokens,
			MaxTurnModelCalls: e.MaxTurnModelCalls, MaxTurnOutputTokens: e.MaxTurnOutputTokens,
			MaxTokens: m.MaxTokens,
		},
		Sampling:     m.Sampling,
		FullTokenIDs: e.FullTokenIDs,
		// The provider's fetches add nothing to a harness that has the
		// host's network already.
		ProviderNetwork: !s.Sandboxed() || s.Config.Network.Egress == config.EgressHost,
		Policy:          s.Policy,
		OnEvent:         ep.emit,
		OnBudget:        d.refuse,
		Logger:          ep.Log(),
		History:         ep.fork.history,
		Replay:          ep.fork.modelReplay,
		OnDivergence:    ep.fork.divergence,
	})
	if err != nil {
		return fmt.Errorf("model gateway: %w", err)
	}
	ln := ep.door(doorModel)
	if ln == nil {
		listen := s.ModelListener
		if listen == nil {
			listen = listenLoopback
		}
		if ln, err = listen(ep.ID()); err != nil {
			return fmt.Errorf("model gateway: listen: %w", err)
		}
	}
	if err := gw.Serve(ln); err != nil {
		return fmt.Errorf("model gateway: %w", err)
	}
	d.gw, d.url = gw, "http://"+ln.Addr().String()
	ep.model = d
	ep.undo.push(ResourceGateway, func(context.Context) error { ep.closeModel(); return nil })
	return nil
}

// modelLaunch points l at the episode's gateway: the model URL becomes the
// gateway's, the key its per-episode key, and the daemon's real keys are
// taken out of the harness's environment (withholdKeys).
func (ep *Episode) modelLaunch(l *harness.Launch) {
	m := ep.env.Config.Harness.Model
	l.Env = ep.withholdKeys(l.Env)
	if ep.model == nil {
		l.Model = harness.ModelAccess{Name: m.Name}
		return
	}
	l.Model = harness.ModelAccess{Root: ep.model.url, Name: m.Name, Key: ep.model.gw.Key()}
}

// BeginModelTurn stamps the gateway's later calls with turn n and returns
// ctx, cancelled should a budget run out during the turn; end must be
// called when the adapter's turn is over. From then on calls are stamped
// n+1: a call between turns belongs to the next turn, as the event log
// files its events (and it counts against that turn's budgets).
func (ep *Episode) BeginModelTurn(ctx context.Context, n int) (context.Context, func()) {
	d := ep.model
	if d == nil {
		return ctx, func() {}
	}
	d.gw.SetTurn(n)
	tctx, cancel := context.WithCancelCause(ctx)
	d.mu.Lock()
	d.cancel, d.refused = cancel, nil
	d.mu.Unlock()
	return tctx, func() {
		d.mu.Lock()
		d.cancel = nil
		d.mu.Unlock()
		cancel(nil)
		d.gw.SetTurn(n + 1)
	}
}

// ModelBudgetFailure returns the model_budget failure of the turn that
// just ended, or nil.
func (ep *Episode) ModelBudgetFailure() *harness.Failure {
	d := ep.model
	if d == nil {
		return nil
	}
	d.mu.Lock()
	refused := d.refused
	d.mu.Unlock()
	if refused == nil {
		return nil
	}
	return harness.Wrap(refused.FailureType(), refused, "the model gateway refused a call")
}

// SetModelSampling pins the sampling of the episode's later model calls
// (a reset's own pin; nil: the agent's own). Without a gateway it does
// nothing.
func (ep *Episode) SetModelSampling(s *gateway.Sampling) {
	if ep.model != nil {
		ep.model.gw.SetSampling(s)
	}
}

// SetModelFullTokenIDs says whether the gateway's llm_responses carry full
// prompt ids (gateway.SetFullTokenIDs); without a gateway it does nothing.
func (ep *Episode) SetModelFullTokenIDs(full bool) {
	if ep.model != nil {
		ep.model.gw.SetFullTokenIDs(full)
	}
}

// RecordReward hands turn n's reward to the gateway, for the export.
func (ep *Episode) RecordReward(n int, reward float64) {
	if ep.model != nil {
		ep.model.gw.SetReward(n, reward)
	}
}

// ModelIssues returns the problems found in turn n's captured calls, for
// the observation's metadata: what the gateway graded when it recorded
// them (gateway.TurnIssues), without building the export. Episode-wide
// warnings (a single call, no training calls) are the export's, not a
// turn's.
func (ep *Episode) ModelIssues(n int) []wire.ModelIssue {
	if ep.model == nil {
		return nil
	}
	issues, err := ep.model.gw.TurnIssues(n)
	if err != nil {
		return nil // evaluation traffic: no token fields to check
	}
	var out []wire.ModelIssue
	for _, is := range issues {
		out = append(out, wire.ModelIssue{Severity: string(is.Severity), Code: is.Code, CallIndex: is.CallIndex, Message: is.Message})
	}
	return out
}

// closeModel stops the episode's gateway (its export stays readable) and
// writes the export to record_dir. It is idempotent.
func (ep *Episode) closeModel() {
	s := ep.env
	d := ep.model
	if d == nil {
		return
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), modelCloseTimeout)
	defer cancel()
	if err := d.gw.Close(ctx); err != nil {
		ep.Log().Warn("model gateway closed uncleanly", "err", err)
	}
	if s.Config.RecordDir != "" {
		if err := ep.writeExport(); err != nil {
			ep.Log().Warn("training export not written", "err", err)
		}
	}
}

// writeExport writes <record_dir>/<episode>.export.json when the episode
// has training traffic; without any no file is written (there is nothing to
// train on, and an empty export would pretend otherwise).
func (ep *Episode) writeExport() error {
	ex, err := ep.model.gw.Export()
	switch {
	case errors.Is(err, gateway.ErrEvaluationTraffic):
		ep.Log().Info("no training export: the model upstream is a passthrough (evaluation traffic)")
		return nil
	case err != nil:
		return err
	case len(ex.Chains) == 0:
		ep.Log().Info("no training export: the episode has no training traffic", "calls", len(ex.Calls))
		return nil
	}
	b, err := json.Marshal(ex)
	if err != nil {
		return fmt.Errorf("encode the export: %w", err)
	}
	// A temporary file of its own, renamed over the export: an ended
	// episode's export may still be written while a new episode of the
	// same id writes its own.
	path := recordfile.Export(ep.env.Config.RecordDir, ep.ID())
	if err := renameio.WriteFile(path, append(b, '\n'), 0o644, renameio.WithTempDir(filepath.Dir(path))); err != nil {
		return fmt.Errorf("write the export: %w", err)
	}
	return nil
}

// Export returns the training export of the episode. An episode without a
// gateway is ErrNoModelGateway, one behind a passthrough upstream
// gateway.ErrEvaluationTraffic, one without usable calls ErrNoTrainingCalls
// (with the export, for its calls and issues).
func (ep *Episode) Export() (*gateway.Export, error) {
	if ep.model == nil {
		return nil, ErrNoModelGateway
	}
	ex, err := ep.model.gw.Export()
	if err != nil {
		return nil, err
	}
	switch {
	case len(ex.Calls) == 0:
		return ex, fmt.Errorf("%w: it made no model call through the gateway", ErrNoTrainingCalls)
	case len(ex.Chains) == 0:
		return ex, fmt.Errorf("%w: none of its %d model calls is usable for training (the export's issues say why)", ErrNoTrainingCalls, len(ex.Calls))
	}
	return ex, nil
}

// minWithheldKey is the shortest key value withholdKeys looks for inside
// other variables: a shorter one would match innocent values.
const minWithheldKey = 8

// withholdKeys returns env without the daemon's variables holding a real
// model key (harness.model.api_key_env, the simulated user's api_key_env)
// and without any other variable whose value holds such a key: a task's
// environment.env resolves ${VAR} from the daemon's environment under a
// name of its own (STOLEN = "${OPENAI_API_KEY}"), which a filter by name
// alone let through to the harness.
func (ep *Episode) withholdKeys(env []string) []string {
	c := ep.env.Config
	names := []string{c.Harness.Model.APIKeyEnv}
	if c.User != nil && c.User.Model != nil {
		names = append(names, c.User.Model.APIKeyEnv)
	}
	var keys []string
	for _, k := range names {
		if v := os.Getenv(k); k != "" && len(v) >= minWithheldKey {
			keys = append(keys, v)
		}
	}
	out := env[:0:0]
	for _, kv := range env {
		name, v, _ := strings.Cut(kv, "=")
		if name != "" && slices.Contains(names, name) {
			continue
		}
		if i := slices.IndexFunc(keys, func(key string) bool { return strings.Contains(v, key) }); i >= 0 {
			ep.Log().Warn("a variable holding a model key withheld from the harness (a task's environment.env or harness.env named it)", "variable", name)
			continue
		}
		out = append(out, kv)
	}
	return out
}
