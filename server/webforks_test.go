package server

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/harnessd/harnessd/client"
	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/server/console"
)

// TestConsoleForkBranches drives the console in headless Chromium over
// record files of two episodes, two siblings forked from one of them and a
// sibling of a sibling (the server's fork links, as a fork registers
// them): the episodes table lists each episode's forks right under it,
// indented, with a branch marker and "forked from … at turn k", and the
// parent with its count of forks; a sibling's page says where it was
// forked from and links there, and the parent's page lists its siblings.
func TestConsoleForkBranches(t *testing.T) {
	dir := t.TempDir()
	for i, id := range []string{"root-a", "root-b", "sib-1", "sib-2", "sib-1-1"} {
		fakeEpisode{id: id, task: "t", agent: "agent", started: 1.7e9 + float64(i)*100, turns: 2 + i%2, turnSeconds: 1, done: true, message: "go"}.write(t, dir)
	}
	ts := consoleServer(t, dir)
	at := time.Unix(1.7e9, 0)
	for _, f := range []console.Fork{
		{SessionID: "s-sib-1", EpisodeID: "sib-1", ParentSessionID: "s-root-a", ParentEpisodeID: "root-a", AtTurn: 2, Mechanism: "replay", Time: at},
		{SessionID: "s-sib-2", EpisodeID: "sib-2", ParentSessionID: "s-root-a", ParentEpisodeID: "root-a", AtTurn: 2, Mechanism: "replay", Time: at},
		{SessionID: "s-sib-1-1", EpisodeID: "sib-1-1", ParentSessionID: "s-sib-1", ParentEpisodeID: "sib-1", AtTurn: 3, Mechanism: "line", Time: at},
	} {
		ts.reg.addFork(f)
	}
	ctx, check := consoleBrowser(t)
	defer check()
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.url+"/web/episodes?token=console-token")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the episodes table", `document.querySelectorAll("#episodes tbody tr[data-episode]").length === 5`)
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll("#episodes tbody tr")].map((tr) => tr.dataset.episode + "|" + tr.className + "|" +
		(tr.querySelector(".branch-marker") ? "↳" : "") + "|" + ((tr.querySelector(".forked-from") || {}).textContent || "") + "|" + ((tr.querySelector(".badge.forks") || {}).textContent || ""))`)
	want := []string{ // newest first, each episode's forks right under it
		"root-b||||",
		"root-a||||2 forks",
		"sib-2|branch|↳|forked from root-a at turn 2 (replay)|",
		"sib-1|branch|↳|forked from root-a at turn 2 (replay)|1 fork",
		"sib-1-1|branch|↳|forked from sib-1 at turn 3 (line)|",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("the episodes table lists\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	indent := eval[[]string](t, ctx, `[...document.querySelectorAll("#episodes tbody td.ep-id")].map((td) => td.style.paddingLeft)`)
	if strings.Join(indent, ",") != ",,1.6em,1.6em,2.8em" {
		t.Errorf("the id cells are indented %q, want the forks indented by depth", indent)
	}
	screenshot(t, ctx, "episodes-forks")

	// A sibling's page: where it was forked from, and its own fork.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr[data-episode="sib-1"] td.ep-id > a`))); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "sib-1's page", `location.pathname === "/web/episodes/sib-1" && document.querySelector("#ep-lineage .forked-from")`)
	if got := eval[string](t, ctx, `document.querySelector("#ep-lineage .forked-from").textContent`); got != "↳ forked from root-a at turn 2 (replay) · session s-root-a" {
		t.Errorf("sib-1's page says %q", got)
	}
	if got := eval[[]string](t, ctx, `[...document.querySelectorAll("#ep-lineage ul.forks li")].map((li) => li.textContent)`); strings.Join(got, ";") != "sib-1-1 at turn 3 (line)" {
		t.Errorf("sib-1's page lists its forks as %q", got)
	}
	// Its parent link opens the parent's page, which lists both siblings.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#ep-lineage .forked-from a`))); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "root-a's page", `location.pathname === "/web/episodes/root-a" && document.querySelectorAll("#ep-lineage ul.forks li").length === 2`)
	if got := eval[string](t, ctx, `document.querySelector("#ep-lineage").textContent`); got != "2 siblings forked from this episode:sib-1 at turn 2 (replay)sib-2 at turn 2 (replay)" {
		t.Errorf("root-a's page: %q", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#ep-lineage .forked-from").length`); n != 0 {
		t.Errorf("root-a's page says it was forked (%d)", n)
	}
	screenshot(t, ctx, "episode-forks")
}

// TestConsoleForkLive forks a live episode of the test agent (the Go
// client, two turns, two siblings) and opens the console in headless
// Chromium: the episodes table lists the parent and, right under it, its
// two live siblings, "forked from" it "at turn 2"; the live view marks the
// siblings' sessions as branches.
func TestConsoleForkLive(t *testing.T) {
	bin := testbin.Path(t, "testharness")
	cfg := &config.Config{
		Name:      "web-env",
		Harness:   config.HarnessConfig{Config: harness.Config{Command: []string{bin, "agent"}, StopGrace: units.Duration(200 * time.Millisecond)}},
		Workspace: config.WorkspaceConfig{Root: t.TempDir()},
		RecordDir: t.TempDir(),
	}
	ts := start(t, Options{Config: cfg, APIToken: "console-token", MaxSessions: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	parent := consoleClient(ctx, t, ts)
	if _, err := parent.Reset(ctx, client.ResetOptions{EpisodeID: "live-parent"}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"reply one", "reply two"} {
		if _, err := parent.Step(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	sibs, err := parent.Fork(ctx, client.ForkOptions{Count: 2})
	if err != nil {
		t.Fatalf("fork: %v", err)
	}
	bctx, check := consoleBrowser(t)
	defer check()
	if err := chromedp.Do(bctx, chromedp.Navigate(ts.url+"/web/episodes?token=console-token&sort=id")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, bctx, "the parent and its siblings", `document.querySelectorAll("#episodes tbody tr[data-episode]").length === 3`)
	rows := eval[[]string](t, bctx, `[...document.querySelectorAll("#episodes tbody tr")].map((tr) => tr.dataset.episode + "|" +
		((tr.querySelector(".forked-from") || {}).textContent || "") + "|" + ((tr.querySelector(".badge.forks") || {}).textContent || ""))`)
	if len(rows) != 3 || rows[0] != "live-parent||2 forks" {
		t.Fatalf("the episodes table lists %q, want live-parent (2 forks) first", rows)
	}
	got := map[string]bool{}
	for _, r := range rows[1:] {
		got[r] = true
	}
	for _, s := range sibs {
		if want := s.EpisodeID + "|forked from live-parent at turn 2 (" + s.Mechanism + ")|"; !got[want] {
			t.Errorf("no row %q under the parent: %q", want, rows)
		}
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(ts.url+"/web?token=console-token")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, bctx, "the live sessions", `document.querySelectorAll("#sessions tbody tr[data-session]").length === 3`)
	marked := eval[[]string](t, bctx, `[...document.querySelectorAll("#sessions tbody tr[data-session]")].filter((tr) => tr.querySelector(".branch-marker")).map((tr) => tr.dataset.session)`)
	if len(marked) != 2 || !slices.Contains(marked, sibs[0].SessionID) || !slices.Contains(marked, sibs[1].SessionID) {
		t.Errorf("the live view marks %q as branches, want the siblings %s and %s", marked, sibs[0].SessionID, sibs[1].SessionID)
	}
}
