package session_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/session"
)

// TestADiskReusedShowsNothingOfTheEpisodeBefore: with a disk quota a
// session's episodes take its quota file systems in turn. Each episode
// writes files into its workspace, HOME and TMPDIR, half of limits.disk
// into a file, and gets an extended attribute on its workspace (set from
// the host, as a harness could on its own directory); each next episode,
// looking from inside, finds its workspace, HOME and TMPDIR empty, the
// attribute gone and the whole of limits.disk available. The positive
// control: some episode is in a directory an earlier one wrote in (the
// disk was reused, so the checks saw a reused one). Sandbox and process
// isolation alike.
func TestADiskReusedShowsNothingOfTheEpisodeBefore(t *testing.T) {
	needQuota(t)
	for _, iso := range []string{config.IsolationSandbox, config.IsolationProcess} {
		t.Run(iso, func(t *testing.T) {
			edit := func(c *config.Config) {
				diskLimited(c, testQuota)
				reuseUnderLoad(c)
			}
			var s *session.Session
			if iso == config.IsolationSandbox {
				s = sandboxed(t, edit)
			} else {
				cfg := testConfig(t)
				cfg.Isolation = iso
				edit(cfg)
				s = newSession(t, cfg)
			}
			used := map[string]int{} // episode directory -> episodes in it
			var fresh int64
			reused := false
			for i := 0; i < 6 || !reused && i < maxReuseEpisodes; i++ {
				reset(t, s)
				// ws, home, tmp: as the harness sees them (in a sandbox
				// fixed paths); hws: the workspace's host path.
				ws := responseText(t, s, "pwd")
				home := strings.TrimPrefix(responseText(t, s, "env HOME"), "HOME=")
				tmp := strings.TrimPrefix(responseText(t, s, "env TMPDIR"), "TMPDIR=")
				for _, d := range []string{ws, home, tmp} {
					var out attackOutcome
					if err := json.Unmarshal([]byte(responseText(t, s, "attack list-dir "+d)), &out); err != nil {
						t.Fatal(err)
					}
					if out.Count != 0 || out.Errno != "" {
						t.Fatalf("episode %d finds %s holding %q (%+v; directories used so far %v)", i, d, out.Detail, out, used)
					}
				}
				hws := episodeDir(t, s, "workspace") // leaves a marker in TMPDIR, for the next episode not to see
				dir := filepath.Dir(hws)
				if used[dir] > 0 {
					reused = true
				}
				used[dir]++
				if _, err := unix.Getxattr(hws, "user.previous", make([]byte, 64)); !errors.Is(err, unix.ENODATA) {
					t.Fatalf("episode %d's workspace carries an earlier one's extended attribute: %v", i, err)
				}
				var st unix.Statfs_t
				if err := unix.Statfs(hws, &st); err != nil {
					t.Fatal(err)
				}
				avail := int64(st.Bavail) * st.Bsize
				if i == 0 {
					fresh = avail
				} else if avail < fresh-64<<10 { // its own directories and MCP configuration
					t.Fatalf("episode %d starts with %d bytes available, the first had %d", i, avail, fresh)
				}
				// What this episode leaves for the next.
				for _, d := range []string{ws, home, tmp} {
					if got := responseText(t, s, "write "+d+"/left.txt from-episode-before"); !strings.Contains(got, "wrote") {
						t.Fatalf("write in %s: %q", d, got)
					}
				}
				if got := responseText(t, s, "write "+ws+"/deep/er/left.txt from-episode-before"); !strings.Contains(got, "wrote") {
					t.Fatalf("write: %q", got)
				}
				if out, _ := fillStep(t, s, "half", testQuota/2); !out.OK {
					t.Fatalf("half of limits.disk: %+v", out)
				}
				if err := unix.Setxattr(hws, "user.previous", []byte("episode"), 0); err != nil {
					t.Fatalf("setxattr: %v", err)
				}
			}
			if !reused {
				t.Fatalf("control: no episode was in a directory an earlier one used (%v): nothing was reused, so this shows nothing", used)
			}
		})
	}
}
