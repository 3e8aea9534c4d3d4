package bridge

import (
	"context"
	"errors"
	"time"
)

// withTimeout is context.WithTimeout, or WithCancel for d <= 0.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// timeoutError returns an ErrTimeout error if ctx (derived from parent with
// timeout d) or parent ended by a deadline, the parent's error if it was
// cancelled, and nil otherwise.
func timeoutError(parent, ctx context.Context, source, what string, d time.Duration) error {
	if err := parent.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return opErr(ErrTimeout, err, "tool '%s' of '%s' timed out (the caller's deadline passed)", what, source)
		}
		return opErr(err, nil, "tool '%s' of '%s': %v", what, source, err)
	}
	if ctx.Err() != nil {
		return opErr(ErrTimeout, ctx.Err(), "tool '%s' of '%s' timed out after %s", what, source, d)
	}
	return nil
}

// upstreamError describes a JSON-RPC error answered by an upstream.
func upstreamError(source, what string, err error) error {
	return opErr(ErrUpstream, err, "tool server '%s' failed %s: %v", source, what, err)
}
