package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/harnessd/harnessd/wire"
)

// ForkOptions say how to fork the connection's live episode
// (docs/protocol.md, "Forking a live episode").
type ForkOptions struct {
	// Count is how many siblings to make (1 to wire.MaxForkCount).
	Count int
	// AtTurn is the turn to fork after: 0 for the current one.
	AtTurn int
	// Mechanism is wire.ForkMechanismResume, ForkMechanismLine,
	// ForkMechanismReplay, or "" for the best the harness allows.
	Mechanism string
}

// Sibling is one sibling a fork made: a session of its own, attachable
// with Attach (or Env.AttachSibling).
type Sibling struct {
	// SessionID and EpisodeID name the sibling's session and its episode.
	SessionID, EpisodeID string
	// Mechanism is how its harness's state was carried over.
	Mechanism string
	// Err is why this sibling failed (*SiblingError); nil for a sibling
	// that is ready.
	Err error
}

// SiblingError is a sibling's failure as the server reported it.
type SiblingError struct{ Message string }

func (e *SiblingError) Error() string { return "sibling failed: " + e.Message }

// ErrNoSession is returned by AttachSibling for a sibling that failed.
var ErrNoSession = errors.New("the sibling has no session")

// Fork forks the connection's live episode, between turns, into
// opts.Count siblings and returns them in order. The connection's session
// goes on unchanged. A refused fork (a turn running, a bad count, a turn
// past the current one, no free session slots for all of them) is a
// *ServerError; a sibling that failed on its own has its Err set.
func (e *Env) Fork(ctx context.Context, opts ForkOptions) ([]Sibling, error) {
	data, err := e.request(ctx, wire.FrameFork, wire.ForkRequest{Count: opts.Count, AtTurn: opts.AtTurn, Mechanism: opts.Mechanism}, wire.FrameFork)
	if err != nil {
		return nil, err
	}
	var reply wire.ForkReply
	if err := json.Unmarshal(data, &reply); err != nil {
		return nil, fmt.Errorf("bad fork reply: %w", err)
	}
	e.mu.Lock()
	e.sessionID = reply.ParentSessionID
	e.mu.Unlock()
	out := make([]Sibling, len(reply.Siblings))
	for i, s := range reply.Siblings {
		out[i] = Sibling{SessionID: s.SessionID, EpisodeID: s.EpisodeID, Mechanism: s.Mechanism}
		if s.Error != "" {
			out[i].Err = &SiblingError{Message: s.Error}
		}
	}
	return out, nil
}

// SessionID returns the server's id of this connection's session when it
// is known: for an attached Env, or once a fork has named it ("" before).
func (e *Env) SessionID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sessionID
}

// AttachSibling opens a new connection, to the server and with the
// options e was dialled with, attached to sibling s's session.
func (e *Env) AttachSibling(ctx context.Context, s Sibling) (*Env, error) {
	if s.Err != nil || s.SessionID == "" {
		return nil, fmt.Errorf("attach sibling %q: %w", s.SessionID, ErrNoSession)
	}
	return Attach(ctx, e.base, s.SessionID, e.opts)
}

// Attach connects to an existing session of the server at baseURL — a
// fork's sibling, or a session created over /mcp — instead of creating
// one: /ws?session_id=sessionID. Closing the returned Env (a close frame)
// ends a sibling's session; a connection that merely drops leaves it for a
// later Attach. It confirms the attachment with a state request, so a
// refused one (unknown session, already attached) is its error.
func Attach(ctx context.Context, baseURL, sessionID string, opts *Options) (*Env, error) {
	u, err := wsURL(baseURL, "/ws")
	if err != nil {
		return nil, err
	}
	u += "?session_id=" + url.QueryEscape(sessionID)
	cn, err := dial(ctx, u, opts)
	if err != nil {
		return nil, err
	}
	e := &Env{cn: cn, base: baseURL, opts: opts, sessionID: sessionID}
	if _, err := e.State(ctx); err != nil {
		cn.close()
		return nil, fmt.Errorf("attach session %s: %w", sessionID, err)
	}
	return e, nil
}
