package server

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/harnessd/harnessd/client"
	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/wire"
)

// consoleBrowser starts headless Chromium for a console test (skipping
// without it, failing under CI=true) and returns its context and a check
// that the page raised no exception and logged no error.
func consoleBrowser(t *testing.T) (context.Context, func()) {
	t.Helper()
	chromium := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		testbin.Missing(t, "chromium is not installed (make test installs it under CI=true: apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-dev-shm-usage", true))
	var mu sync.Mutex
	var problems []string
	listen := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text+" "+fmt.Sprint(ev.ExceptionDetails.Exception.Description))
		case *runtime.EventConsoleAPICalled:
			if ev.Type == "error" || ev.Type == "warning" {
				problems = append(problems, "console."+string(ev.Type))
			}
		}
	}
	// Chromium itself now and then exits before it listens on a loaded
	// machine ("chrome failed to start", its output only the usual dbus
	// and crashpad complaints): a start is tried three times, each failure
	// logged, before the test fails.
	var bctx context.Context
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
		c, cancelBrowser := chromedp.NewContext(actx)
		err := chromedp.Listen(c, listen)
		if err == nil {
			t.Cleanup(cancel)
			t.Cleanup(cancelAlloc)
			t.Cleanup(cancelBrowser)
			bctx = c
			break
		}
		cancelBrowser()
		cancelAlloc()
		cancel()
		if attempt == 3 || !strings.Contains(err.Error(), "chrome failed to start") {
			t.Fatalf("starting chromium (attempt %d): %v", attempt, err)
		}
		t.Logf("starting chromium (attempt %d): %v", attempt, err)
	}
	return bctx, func() {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(problems) > 0 {
			t.Errorf("console problems: %q", problems)
		}
	}
}

// consoleClient dials ts as a trainer with the console tests' API token;
// it is closed when the test ends.
func consoleClient(ctx context.Context, t *testing.T, ts *testServer) *client.Env {
	t.Helper()
	env, err := client.Dial(ctx, ts.url, &client.Options{Token: "console-token"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// consoleServer serves record_dir dir (and runs the test harness).
func consoleServer(t *testing.T, dir string) *testServer {
	t.Helper()
	bin := testbin.Path(t, "testharness")
	cfg := &config.Config{
		Name:      "web-env",
		Harness:   config.HarnessConfig{Config: harness.Config{Command: []string{bin, "agent"}, StopGrace: units.Duration(200 * time.Millisecond)}},
		Workspace: config.WorkspaceConfig{Root: t.TempDir()},
		RecordDir: dir,
	}
	return start(t, Options{Config: cfg, APIToken: "console-token", MaxSessions: 2})
}

// eval runs JavaScript expression js in the page.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// waitPage polls js until it is truthy.
func waitPage(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool]("!!("+js+")", chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, js, err)
	}
}

// screenshot writes the whole page (1280 wide) to docs/console/NAME.png when
// HARNESSD_SCREENSHOTS=1 (so make test leaves docs alone).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("HARNESSD_SCREENSHOTS") != "1" {
		return
	}
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join("..", "docs", "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rowsJS reads a column of the episodes table's rows.
func rowsJS(class string) string {
	return `[...document.querySelectorAll("#episodes tbody td.` + class + `")].map((td) => td.textContent)`
}

// TestConsoleEpisodesTable drives the episodes table in headless Chromium
// over 1,000 record files: the first page's render time (logged, not
// asserted), sorting by a column both ways, filtering by task, status,
// error type and reward range, searching message text, paging, and a row's
// link opening its episode.
func TestConsoleEpisodesTable(t *testing.T) {
	const n = 1000
	dir := t.TempDir()
	thousandEpisodes(t, dir, n)
	ts := consoleServer(t, dir)
	ctx, check := consoleBrowser(t)
	defer check()

	if err := chromedp.Do(ctx, chromedp.Navigate(ts.url+"/web/episodes?token=console-token")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the first page of episodes", `window.firstEpisodesRender`)
	apiJS := `performance.getEntriesByType("resource").filter((e) => e.name.includes("/web/api/episodes")).map((e) => e.duration)[0] || 0`
	cold, coldAPI := eval[float64](t, ctx, `window.firstEpisodesRender`), eval[float64](t, ctx, apiJS)
	// Again (the page took the token out of its address, so a reload
	// would be refused: navigate with it).
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.url+"/web/episodes?token=console-token")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the first page again", `window.firstEpisodesRender`)
	warm, warmAPI := eval[float64](t, ctx, `window.firstEpisodesRender`), eval[float64](t, ctx, apiJS)
	t.Logf("episodes table over %d record files: first page rendered %.0f ms after navigation (its API call %.0f ms, building the index), "+
		"%.0f ms when opened again (API call %.0f ms, index warm)", n, cold, coldAPI, warm, warmAPI)

	if got := eval[string](t, ctx, `document.getElementById("ep-range").textContent`); got != "1–50 of 1000" {
		t.Errorf("range %q, want 1–50 of 1000", got)
	}
	if ids := eval[[]string](t, ctx, rowsJS("ep-id")); len(ids) != 50 || ids[0] != "ep-0999" || ids[49] != "ep-0950" {
		t.Errorf("default order (newest first): %d rows from %v", len(ids), ids[:min(2, len(ids))])
	}
	waitRange := func(want string) {
		t.Helper()
		waitPage(t, ctx, "range "+want, `document.getElementById("ep-range").textContent === `+fmt.Sprintf("%q", want))
	}
	click := func(sel string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
			t.Fatalf("click %s: %v", sel, err)
		}
	}
	// Sort by reward, descending then ascending.
	click(`#episodes th button[data-sort="reward"]`)
	// The header's mark is set when the sorted page renders (the first
	// row's 0.9 is also the newest episode's, shown before the click).
	waitPage(t, ctx, "sorted by reward", `location.search.includes("sort=-reward") && document.querySelector('#episodes th button[data-sort="reward"]').classList.contains("desc") && document.querySelector("#episodes tbody td.ep-reward").textContent === "0.9"`)
	click(`#episodes th button[data-sort="reward"]`)
	waitPage(t, ctx, "sorted by reward ascending", `location.search.includes("sort=reward") && !location.search.includes("sort=-reward")`)
	waitPage(t, ctx, "no reward first", `document.querySelector("#episodes tbody td.ep-reward").textContent === "—"`)
	// Incomplete episodes (every 50th) have no reward: 20 of them first.
	if rs := eval[[]string](t, ctx, rowsJS("ep-reward")); rs[19] != "—" || rs[20] != "0" {
		t.Errorf("ascending rewards %v", rs[15:25])
	}
	laterClickWins(t, ctx, click)
	// Filter by task: 200 of each.
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#ep-task"), "task-3")); err != nil {
		t.Fatal(err)
	}
	eval[bool](t, ctx, `document.getElementById("ep-task").dispatchEvent(new Event("change"))`)
	waitRange("1–50 of 200 (1000 episodes in all)")
	for _, task := range eval[[]string](t, ctx, rowsJS("ep-task")) {
		if task != "task-3" {
			t.Fatalf("task filter shows %q", task)
		}
	}
	// And by error type: task-3 is i%5 == 3, turn_timeout i%7 == 6: i ≡ 13 (mod 35), 29 of them below 1000.
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#ep-error"), "turn_timeout")); err != nil {
		t.Fatal(err)
	}
	eval[bool](t, ctx, `document.getElementById("ep-error").dispatchEvent(new Event("change"))`)
	waitRange("1–29 of 29 (1000 episodes in all)")
	for _, st := range eval[[]string](t, ctx, `[...document.querySelectorAll("#episodes tbody td.ep-status")].map((td) => td.textContent)`) {
		if st != "failed" {
			t.Fatalf("an episode with an error type shows status %q", st)
		}
	}
	// Reward range and status: clear the task and error type, keep 0.8–0.9 done.
	eval[bool](t, ctx, `(() => { for (const id of ["ep-task", "ep-error"]) document.getElementById(id).value = "";
		document.getElementById("ep-status").value = "done"; document.getElementById("ep-rmin").value = "0.8";
		document.getElementById("ep-rmax").value = "0.9"; return true; })()`)
	click(`#ep-filters button[type="submit"]`)
	// i%10 in {8, 9}: 200, minus those with an error type (failed): i%7 == 6.
	want := 0
	for i := range n {
		if i%50 != 0 && i%10 >= 8 && i%7 != 6 {
			want++
		}
	}
	waitRange(fmt.Sprintf("1–50 of %d (1000 episodes in all)", want))
	// Search: "needle" is in ten episodes' messages.
	eval[bool](t, ctx, `(() => { for (const id of ["ep-status", "ep-rmin", "ep-rmax"]) document.getElementById(id).value = "";
		document.getElementById("ep-q").value = "NEEDLE"; return true; })()`)
	click(`#ep-filters button[type="submit"]`)
	waitRange("1–10 of 10 (1000 episodes in all)")
	screenshot(t, ctx, "episodes")
	// Paging.
	eval[bool](t, ctx, `(() => { document.getElementById("ep-q").value = ""; return true; })()`)
	click(`#ep-filters button[type="submit"]`)
	waitRange("1–50 of 1000")
	click("#ep-next")
	waitRange("51–100 of 1000")
	// A row's link opens its episode in the page.
	id := eval[string](t, ctx, `document.querySelector("#episodes tbody td.ep-id a").textContent`)
	click(`#episodes tbody td.ep-id a`)
	waitPage(t, ctx, "the episode page", `location.pathname === "/web/episodes/`+id+`" && document.querySelector("#ep-turns article")`)
	if got := eval[string](t, ctx, `document.getElementById("ep-title").textContent`); got != "Episode "+id {
		t.Errorf("episode page title %q", got)
	}
	laterEpisodeWins(t, ctx)
}

// laterEpisodeWins: an episode's page opened while another's answer is on
// its way shows the later one only, even when the earlier answer arrives
// last (held in the page's fetch).
func laterEpisodeWins(t *testing.T, ctx context.Context) {
	t.Helper()
	eval[bool](t, ctx, heldFetchJS("/web/api/episodes/ep-0001"))
	eval[bool](t, ctx, `(() => { go("/web/episodes/ep-0001"); return true; })()`)
	waitPage(t, ctx, "ep-0001's answer held", `window.releaseHeld`)
	eval[bool](t, ctx, `(() => { go("/web/episodes/ep-0002"); return true; })()`)
	shown := `document.getElementById("ep-title").textContent === "Episode ep-0002" && document.querySelector("#ep-turns article") && document.querySelectorAll("#ep-summary p.label").length === 1`
	waitPage(t, ctx, "ep-0002's page", shown)
	eval[bool](t, ctx, `(() => { window.releaseHeld(); return true; })()`)
	waitPage(t, ctx, "ep-0001's held answer arrived", `window.heldDone`)
	if !eval[bool](t, ctx, "!!("+shown+")") {
		t.Errorf("ep-0001's answer, arriving last, was shown on ep-0002's page: title %q, %d summaries",
			eval[string](t, ctx, `document.getElementById("ep-title").textContent`),
			eval[int](t, ctx, `document.querySelectorAll("#ep-summary p.label").length`))
	}
}

// TestConsoleEpisodePage opens an episode by its deep link and checks what
// it shows: the task, the grade with the tests' output tails, one entry
// per tool call joining the harness's and the bridge's events with both
// timings, thinking collapsed, each turn's changed workspace paths, and the
// token view of its captured calls
// (masked and unmasked tokens, logprobs in the titles).
func TestConsoleEpisodePage(t *testing.T) {
	dir := t.TempDir()
	e := fakeEpisode{id: "deep/link é", task: "fix-the-bug", agent: "claude", started: 1.7e9, turns: 2, turnSeconds: 3,
		reward: ptr(1.0), done: true, message: "fix it <script>alert(1)</script>", modelMS: 40, tokens: 10, tools: true,
		thinking: "let me think about <b>this</b>", changed: []string{"src/", "src/fix.go"},
		grade: &wire.TaskGrade{Reward: ptr(1.0), Exit: &wire.ExitStatus{Code: 0}, DurationMS: 1234,
			StdoutTail: "PASSED test_fix\n1 passed", StderrTail: "warning: slow"}}
	e.write(t, dir)
	writeFakeExport(t, dir, e.id)
	ts := consoleServer(t, dir)
	ctx, check := consoleBrowser(t)
	defer check()
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.url+"/web/episodes/deep%2Flink%20%C3%A9?token=console-token")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the episode", `document.querySelector(".token-call")`)
	text := func(js string) string { t.Helper(); return eval[string](t, ctx, js) }
	for js, want := range map[string]string{
		`document.getElementById("ep-title").textContent`:                                   "Episode deep/link é",
		`document.getElementById("ep-task-id").textContent`:                                 "fix-the-bug",
		`document.getElementById("ep-task-instruction").textContent`:                        "Solve fix-the-bug <b>carefully</b>.",
		`document.getElementById("ep-reward").textContent`:                                  "1",
		`document.getElementById("ep-grade").textContent`:                                   "testsreward 1 · exit 0 · 1.234 s",
		`document.getElementById("ep-grade-stdout").textContent`:                            "PASSED test_fix\n1 passed",
		`document.getElementById("ep-grade-stderr").textContent`:                            "warning: slow",
		`String(document.querySelectorAll("article[data-turn] .tool-entry").length)`:        "2",
		`document.querySelector("article[data-turn='1'] .tool-entry .match").textContent`:   "tool name and arguments",
		`String(document.querySelector("article[data-turn='1'] details.thinking").open)`:    "false",
		`document.querySelector("article[data-turn='1'] details.thinking pre").textContent`: "let me think about <b>this</b>",
		`String(document.querySelectorAll("#ep-turns script, #ep-turns b").length)`:         "0",
		`String(document.querySelectorAll(".token-call[data-call='1'] .tok.m0").length)`:    "4",
		`String(document.querySelectorAll(".token-call[data-call='1'] .tok.m1").length)`:    "2",
		`String(document.querySelectorAll(".token-call[data-call='2'] .tok.m0").length)`:    "1",
		`String(document.querySelectorAll(".token-call[data-call='2'] .tok.m1").length)`:    "3",
		`document.querySelector(".token-call[data-call='1'] .tok.m1").title`:                "#4 id 201 · loss mask 1 · logprob -0.25",
		`document.querySelector(".token-call[data-call='1'] .tok.m0").title`:                "#0 id 101 · loss mask 0",
		`document.querySelector(".token-call[data-call='2'] .decoded").textContent`:         "answer 2",
	} {
		if got := text(js); got != want {
			t.Errorf("%s = %q, want %q", js, got, want)
		}
	}
	// Both sides' timings: the bridge's measured duration, the harness's
	// call-to-result time (ms of the UTC clock vary with float rounding).
	for side, want := range map[string]string{"bridge": " · 20 ms (measured by the bridge)", "harness": " · 50 ms call to result"} {
		got := text(`document.querySelector("article[data-turn='1'] .side-` + side + ` .tool-timing").textContent`)
		if !strings.HasPrefix(got, "called 22:13:20.") || !strings.HasSuffix(got, want) {
			t.Errorf("%s side's timing %q, want called 22:13:20.* and %q", side, got, want)
		}
	}
	screenshot(t, ctx, "episode")
}

// TestConsoleOverviewOfNoRecords: the overview of an empty record
// directory draws (the page read the length of a null reward list and
// threw, leaving the charts empty).
func TestConsoleOverviewOfNoRecords(t *testing.T) {
	ts := consoleServer(t, t.TempDir())
	ctx, check := consoleBrowser(t)
	defer check()
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.url+"/web/overview?token=console-token")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the overview's charts", `window.overviewDrawn`)
	if got := eval[string](t, ctx, `document.querySelector("#ov-reward svg").dataset.points + " " + document.querySelector("#ov-reward .hint").textContent`); got != "0 0 rewarded episodes, moving average over 10" {
		t.Errorf("the reward chart of no records: %q", got)
	}
}

// TestConsoleOverview checks the overview's charts against known records:
// the reward points and their moving average, the pass rate per task, the
// error types, the turn and model-call latency histograms and the tokens
// per episode, read back from the SVG the page drew.
func TestConsoleOverview(t *testing.T) {
	dir := t.TempDir()
	// Rewards in start order 0, 1, 1, 0.5, 1, 0; tasks a a b b b c; one
	// turn_timeout; turns of 0.3 s (two of them 3 s); model calls of 50 ms
	// or 700 ms; 1,500 or 20,000 tokens per call.
	eps := []fakeEpisode{
		{id: "o1", task: "a", reward: ptr(0.0), turns: 1, turnSeconds: 0.3, modelMS: 50, tokens: 1500},
		{id: "o2", task: "a", reward: ptr(1.0), turns: 1, turnSeconds: 0.3, modelMS: 50, tokens: 1500},
		{id: "o3", task: "b", reward: ptr(1.0), turns: 2, turnSeconds: 3, modelMS: 700, tokens: 20000},
		{id: "o4", task: "b", reward: ptr(0.5), turns: 1, turnSeconds: 0.3, modelMS: 50, tokens: 1500},
		{id: "o5", task: "b", reward: ptr(1.0), turns: 1, turnSeconds: 0.3, modelMS: 50, tokens: 1500},
		{id: "o6", task: "c", reward: ptr(0.0), turns: 1, turnSeconds: 0.3, modelMS: 50, tokens: 1500, errorType: wire.FailureTurnTimeout},
	}
	for i, e := range eps {
		e.started, e.done, e.agent, e.message = 1.7e9+float64(i)*100, true, "agent", "go"
		e.write(t, dir)
	}
	ts := consoleServer(t, dir)
	ctx, check := consoleBrowser(t)
	defer check()
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.url+"/web/overview?token=console-token")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the overview's charts", `window.overviewDrawn`)
	bars := func(fig string) string {
		t.Helper()
		return eval[string](t, ctx, `[...document.querySelectorAll("#`+fig+` g.bar-row")].map((g) => g.dataset.label + "=" + g.querySelector(".bar-value").textContent).join(", ")`)
	}
	for fig, want := range map[string]string{
		"ov-pass":   "a=1/2 (50%), b=2/3 (67%), c=0/1 (0%)",
		"ov-errors": "none=5, turn_timeout=1",
		"ov-turn":   "≤ 100 ms=0, ≤ 250 ms=0, ≤ 500 ms=5, ≤ 1 s=0, ≤ 2.5 s=0, ≤ 5 s=2, ≤ 10 s=0, ≤ 30 s=0, ≤ 60 s=0, > 60 s=0",
		"ov-model":  "≤ 100 ms=5, ≤ 250 ms=0, ≤ 500 ms=0, ≤ 1 s=2, ≤ 2.5 s=0, ≤ 5 s=0, ≤ 10 s=0, ≤ 30 s=0, ≤ 60 s=0, > 60 s=0",
		"ov-tokens": "≤ 1k=0, ≤ 2k=5, ≤ 4k=0, ≤ 8k=0, ≤ 16k=0, ≤ 32k=0, ≤ 64k=1, ≤ 128k=0, > 128k=0",
	} {
		if got := bars(fig); got != want {
			t.Errorf("%s draws %q, want %q", fig, got, want)
		}
	}
	if got := eval[string](t, ctx, `document.querySelector("#ov-reward svg").dataset.points + " " + document.querySelector("#ov-reward polyline.ma").dataset.last +
		" " + [...document.querySelectorAll("#ov-reward circle title")].map((x) => x.textContent).join("|")`); got != "6 0.583 o1: reward 0|o2: reward 1|o3: reward 1|o4: reward 0.5|o5: reward 1|o6: reward 0" {
		t.Errorf("reward chart: %q", got)
	}
	screenshot(t, ctx, "overview")
}

// TestConsoleLiveScreenshot runs an episode through the chat box for the
// live view's screenshot, and checks the live table shows whole ids.
func TestConsoleLiveScreenshot(t *testing.T) {
	dir := t.TempDir()
	ts := consoleServer(t, dir)
	ctx, check := consoleBrowser(t)
	defer check()
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.url+"/web?token=console-token"), chromedp.WaitVisible("#sessions"),
		chromedp.Click("#chat-reset"), chromedp.WaitEnabled("#chat-send"),
		chromedp.SetValue("#chat-input", "reply hello from the live view"), chromedp.Click("#chat-send"),
		chromedp.WaitVisible(`article[data-turn="1"] .obs-reward`)); err != nil {
		t.Fatal(err)
	}
	ep := eval[string](t, ctx, `document.querySelector("#sessions tbody tr td:nth-child(3) a").textContent`)
	if len(ep) < 32 || strings.Contains(ep, "…") {
		t.Errorf("the sessions table shows episode id %q, want it whole", ep)
	}
	waitPage(t, ctx, "the turn's end in the lists", `document.querySelector("#sessions tbody td:nth-child(2)").textContent === "active" &&
		document.querySelector("#records li .label") && document.querySelector("#records li .label").textContent.includes("1 turns")`)
	screenshot(t, ctx, "live")
	// The live episode is in the episodes table, as live.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`nav a[data-nav="episodes"]`))); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the live episode listed", `document.querySelector("#episodes tbody td.ep-status") && document.querySelector("#episodes tbody td.ep-status").textContent === "active (live)"`)
	if got := eval[string](t, ctx, `document.querySelector("#episodes tbody td.ep-id").textContent`); got != ep {
		t.Errorf("episodes table lists %q, want the live episode %q", got, ep)
	}
}

// heldFetchJS makes the page's fetch hold the answer to a request whose
// address contains part until window.releaseHeld() is called;
// window.heldDone is set once the page has had the held answer (its json
// read, and the tasks that awaited it run).
func heldFetchJS(part string) string {
	return fmt.Sprintf(`(() => {
	const real = window.fetch;
	window.heldDone = false;
	window.fetch = async (url, opts) => {
		const res = await real(url, opts);
		if (!String(url).includes(%q)) return res;
		window.fetch = real;
		await new Promise((resolve) => { window.releaseHeld = resolve; });
		const json = res.json.bind(res);
		res.json = async () => { const v = await json(); setTimeout(() => { window.heldDone = true; }, 0); return v; };
		return res;
	};
	return true;
})()`, part)
}

// laterClickWins: on the episodes table sorted by reward ascending, two
// clicks on the reward header (descending, then ascending again) whose
// answers arrive in the other order leave the table as the later click
// asked: the earlier answer, arriving last, is dropped.
func laterClickWins(t *testing.T, ctx context.Context, click func(string)) {
	t.Helper()
	eval[bool](t, ctx, heldFetchJS("sort=-reward"))
	click(`#episodes th button[data-sort="reward"]`) // descending: held
	waitPage(t, ctx, "the descending request held", `location.search.includes("sort=-reward") && window.releaseHeld`)
	click(`#episodes th button[data-sort="reward"]`) // ascending: answered
	asc := `location.search.includes("sort=reward") && !location.search.includes("sort=-reward") && document.querySelector('#episodes th button[data-sort="reward"]').classList.contains("asc") && document.querySelector("#episodes tbody td.ep-reward").textContent === "—"`
	waitPage(t, ctx, "sorted ascending again", asc)
	eval[bool](t, ctx, `(() => { window.releaseHeld(); return true; })()`)
	waitPage(t, ctx, "the held answer arrived", `window.heldDone`)
	if !eval[bool](t, ctx, "!!("+asc+")") {
		t.Errorf("the earlier click's answer, arriving last, replaced the later one's: first reward %q",
			eval[string](t, ctx, `document.querySelector("#episodes tbody td.ep-reward").textContent`))
	}
}
