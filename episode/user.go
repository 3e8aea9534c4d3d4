package episode

import (
	"context"
	"errors"
	"fmt"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/process"
)

// ResourceUser is the simulated user's program (user.command).
const ResourceUser Resource = "user"

// MaxUserLineBytes bounds one line the simulated user's program writes.
const MaxUserLineBytes = 1 << 20

// StartUser starts the episode's simulated user program (u.Command) in a
// side sandbox of its own, as a command rubric runs: the harness's
// restrictions, a non-root uid, no network, no workspace (a user sees the
// conversation, not the files), the daemon's directories hidden. It reads
// and writes JSON lines (the session speaks to it). The program is the
// episode's: Stop and Close end it with its sandbox.
func (ep *Episode) StartUser(ctx context.Context, u *config.UserConfig) (*process.Process, error) {
	if u == nil || len(u.Command) == 0 {
		return nil, errors.New("no user program is configured")
	}
	e := ep.env
	l := &sideLauncher{e: e, ep: ep, sp: sideSpec{name: "user", command: u.Command}}
	if _, err := l.sandbox(ctx); err != nil {
		return nil, fmt.Errorf("simulated user: %w", err)
	}
	env := process.DefaultEnviron(u.Env)
	env = append(env, "HARNESSD_EPISODE_ID="+ep.ID())
	p, err := e.Supervisor.Start(process.Spec{
		Name:         "user",
		Path:         u.Command[0],
		Args:         u.Command[1:],
		Dir:          "/",
		Env:          env,
		Stdio:        process.StdioLines,
		MaxLineBytes: MaxUserLineBytes,
		Logger:       ep.Log(),
		Launcher:     l,
	})
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("simulated user: start %s: %w", u.Command[0], err)
	}
	grace := e.Config.Harness.StopGrace.D()
	ep.undo.push(ResourceUser, func(ctx context.Context) error {
		return errors.Join(p.Stop(ctx, grace), l.Close())
	})
	return p, nil
}
