package episode

import (
	"fmt"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/wire"
)

// forkDoors is what a forked episode's doors start from (Spec's fork
// fields): the parent's model calls, and for a replay the records the
// doors answer from.
type forkDoors struct {
	history      *gateway.History
	modelReplay  bool
	toolReplay   []bridge.ToolRecord
	toolInherit  []bridge.ToolRecord
	onDivergence func(error)
}

// divergence reports a door's divergence to the spec's OnDivergence.
func (f *forkDoors) divergence(d wire.Divergence) {
	if f.onDivergence != nil {
		f.onDivergence(&d)
	}
}

// ModelHistory returns the gateway's recorded calls so far (for a fork's
// siblings); nil without a model gateway.
func (ep *Episode) ModelHistory() *gateway.History {
	if ep.model == nil {
		return nil
	}
	return ep.model.gw.History()
}

// ToolRecords returns the bridge's record of the calls it served, in
// order (for a replaying sibling); none without a bridge.
func (ep *Episode) ToolRecords() ([]bridge.ToolRecord, error) {
	if ep.server == nil {
		return nil, nil
	}
	recs, err := ep.server.Records()
	if err != nil {
		return nil, fmt.Errorf("the bridge's record of tool calls: %w", err)
	}
	return recs, nil
}

// ToolRecordCount is how many calls the bridge has recorded.
func (ep *Episode) ToolRecordCount() int {
	if ep.server == nil {
		return 0
	}
	return ep.server.RecordCount()
}

// EndReplay ends a replaying sibling's replay: the first divergence of
// either door, or the recorded calls the harness did not make (fewer
// calls than its parent), as a divergence; nil when every recorded call
// was answered. Later calls go live.
func (ep *Episode) EndReplay() error {
	if ep.model != nil {
		if d := ep.model.gw.EndReplay(); d != nil {
			return d
		}
	}
	if ep.server != nil {
		if d := ep.server.EndReplay(); d != nil {
			return d
		}
	}
	return nil
}
