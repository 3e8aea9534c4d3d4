package episode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/internal/beneath"
)

// PlaceFile writes content to rel beneath the workspace (an event's file
// effect; session runs the queue) without following links (package
// beneath); in a sandbox what it made becomes the harness's.
func (ep *Episode) PlaceFile(rel, content string) error {
	made, err := beneath.WriteFile(ep.dirs.Workspace, rel, content)
	if ep.sandbox != nil {
		// Beneath the workspace: the harness is live, and a directory on
		// the way may be a link to a host directory by now.
		uid, gid := ep.sandbox.HostIDs()
		if cerr := beneath.Lchown(ep.dirs.Workspace, uid, gid, made...); cerr != nil && err == nil {
			err = fmt.Errorf("place %q: give it to the harness: %w", rel, cerr)
		}
	}
	return err
}

// CallSourceTool calls tool name (its upstream name) of tool source server
// on the daemon's path (an event's tool effect) and returns the result's
// text; a tool reporting an error is an error carrying its text.
func (ep *Episode) CallSourceTool(ctx context.Context, server, name string, args json.RawMessage) (string, error) {
	if ep.catalog == nil {
		return "", errors.New("no tools are configured")
	}
	src, ok := ep.catalog.Source(server)
	if !ok {
		return "", fmt.Errorf("no tool server %q", server)
	}
	res, err := src.Call(ctx, name, args)
	switch {
	case err != nil:
		return "", err
	case res == nil:
		return "", fmt.Errorf("tool %s/%s returned no result", server, name)
	case res.IsError:
		return resultText(res), fmt.Errorf("tool reported an error: %s", resultText(res))
	}
	return resultText(res), nil
}

// NoteEnvEvent tells the model gateway, if any, of a fired event, for the
// training export.
func (ep *Episode) NoteEnvEvent(e gateway.EnvEvent) {
	if ep.model != nil {
		ep.model.gw.NoteEvent(e)
	}
}
