package episode

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// snapshotsOf takes n snapshots of one episode (no quota), the i-th after
// writing size bytes to the file turn-i.
func snapshotsOf(t *testing.T, n, size int) []*Snapshot {
	t.Helper()
	e := testEnv(t, filepath.Join(t.TempDir(), "session"), 0)
	ep := openDirs(t, e, nil)
	var out []*Snapshot
	for i := range n {
		write(t, filepath.Join(ep.Dirs().Workspace, "turn-"+strconv.Itoa(i)), strings.Repeat("x", size))
		s, err := ep.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func gone(s *Snapshot) bool {
	_, err := os.Stat(s.d.dir)
	return errors.Is(err, fs.ErrNotExist)
}

func TestCheckpointsKeepAtMostMaxCount(t *testing.T) {
	snaps := snapshotsOf(t, 5, 10)
	c := NewCheckpoints(3, 0)
	for i, s := range snaps {
		c.Add(i, s)
	}
	if got := c.Turns(); !slices.Equal(got, []int{2, 3, 4}) {
		t.Errorf("turns %v, want the newest three", got)
	}
	for i, s := range snaps {
		if gone(s) != (i < 2) {
			t.Errorf("snapshot %d removed: %v", i, gone(s))
		}
	}
	if _, ok := c.At(1); ok {
		t.Error("a dropped turn is still there")
	}
	s, ok := c.At(3)
	if !ok {
		t.Fatal("turn 3 missing")
	}
	// The snapshot after turn 3 holds turns 0..3's files, not 4's.
	e := testEnv(t, filepath.Join(t.TempDir(), "session"), 0)
	ws := openDirs(t, e, s).Dirs().Workspace
	for i := range 5 {
		_, err := os.Stat(filepath.Join(ws, "turn-"+strconv.Itoa(i)))
		if (err == nil) != (i <= 3) {
			t.Errorf("the checkpoint of turn 3 has turn-%d: %v", i, err == nil)
		}
	}
	// The caller's handle outlives the store's.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if gone(s) {
		t.Error("Close removed a snapshot an At handle holds")
	}
	for i, x := range snaps {
		if i != 3 && !gone(x) {
			t.Errorf("Close left snapshot %d", i)
		}
	}
	s.Close()
	if !gone(s) {
		t.Error("the last handle's Close left the snapshot")
	}
	if len(c.Turns()) != 0 || c.Bytes() != 0 {
		t.Errorf("after Close: %v, %d bytes", c.Turns(), c.Bytes())
	}
	// After Close an Add closes its snapshot at once.
	late := snapshotsOf(t, 1, 1)[0]
	c.Add(9, late)
	if !gone(late) {
		t.Error("an Add after Close kept its snapshot")
	}
}

func TestCheckpointsKeepAtMostMaxBytes(t *testing.T) {
	snaps := snapshotsOf(t, 4, 64<<10)
	one := snaps[0].Bytes()
	if one <= 0 {
		t.Fatalf("a snapshot of 64 KiB occupies %d bytes", one)
	}
	for _, s := range snaps[1:] {
		if s.Bytes() <= one {
			t.Fatalf("later snapshots (more files) are not bigger: %d, %d", s.Bytes(), one)
		}
	}
	// Room for the last two, not three.
	limit := snaps[2].Bytes() + snaps[3].Bytes()
	c := NewCheckpoints(0, limit)
	defer c.Close()
	for i, s := range snaps {
		c.Add(i, s)
		if c.Bytes() > limit {
			t.Errorf("after turn %d the store holds %d bytes, bound %d", i, c.Bytes(), limit)
		}
	}
	if got := c.Turns(); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("turns %v, want [2 3]", got)
	}
	if c.Bytes() != limit {
		t.Errorf("bytes %d, want %d", c.Bytes(), limit)
	}
	// One snapshot bigger than the bound by itself is not kept.
	small := NewCheckpoints(0, 1)
	big := snapshotsOf(t, 1, 64<<10)[0]
	small.Add(0, big)
	if len(small.Turns()) != 0 || !gone(big) {
		t.Errorf("a snapshot over the bound is kept: %v", small.Turns())
	}
}

func TestCheckpointsReplaceATurn(t *testing.T) {
	snaps := snapshotsOf(t, 3, 10)
	c := NewCheckpoints(16, 1<<30)
	c.Add(1, snaps[0])
	c.Add(2, snaps[1])
	c.Add(1, snaps[2]) // the episode was reset to turn 0 and took turn 1 again
	if !gone(snaps[0]) {
		t.Error("the replaced snapshot was kept")
	}
	if got := c.Turns(); !slices.Equal(got, []int{2, 1}) {
		t.Errorf("turns %v", got)
	}
	if want := snaps[1].Bytes() + snaps[2].Bytes(); c.Bytes() != want {
		t.Errorf("bytes %d, want %d", c.Bytes(), want)
	}
	s, ok := c.At(1)
	if !ok || s.d != snaps[2].d {
		t.Error("At(1) is not the newer snapshot")
	}
	s.Close()
	c.Close()
	c.Close()
	for i, s := range snaps {
		if !gone(s) {
			t.Errorf("snapshot %d left after Close", i)
		}
	}
}

func TestEnvCheckpointsFollowTheConfiguration(t *testing.T) {
	e := testEnv(t, filepath.Join(t.TempDir(), "session"), 0)
	if c := e.NewCheckpoints(); c != nil {
		t.Errorf("checkpoints off (the default) gave a store: %+v", c)
	}
	e.Config.Episode.Checkpoints = "every_turn"
	e.Config.Episode.MaxCheckpoints = 3
	e.Config.Episode.MaxCheckpointBytes = 5 << 20
	c := e.NewCheckpoints()
	if c == nil || c.MaxCount != 3 || c.MaxBytes != 5<<20 {
		t.Errorf("every_turn: %+v", c)
	}
}
