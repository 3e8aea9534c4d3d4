// harnessd console pages beyond the live view: the episodes table
// (/web/episodes), one episode (/web/episodes/ID) and the overview
// (/web/overview). Plain JavaScript, no library; every piece of data goes
// into the page as text (textContent, text nodes, attributes), never as HTML.
"use strict";

const views = { live: "live-view", episodes: "episodes-view", episode: "episode-view", overview: "overview-view" };

// route shows the view of location.pathname.
function route() {
  const p = location.pathname.replace(/\/+$/, "");
  let name = "live", arg = "";
  if (p === "/web/episodes") name = "episodes";
  else if (p.startsWith("/web/episodes/")) { name = "episode"; arg = decodeURIComponent(p.slice("/web/episodes/".length)); }
  else if (p === "/web/overview") name = "overview";
  for (const [k, id] of Object.entries(views)) $(id).hidden = k !== name;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("current", a.dataset.nav === (name === "episode" ? "episodes" : name));
  document.title = "harnessd · " + (name === "episode" ? "episode " + arg : name);
  if (name === "live") startLive();
  else if (name === "episodes") loadEpisodes();
  else if (name === "episode") loadEpisodePage(arg);
  else loadOverview();
}

// go navigates inside the page (the API token stays in sessionStorage).
function go(path) { history.pushState(null, "", path); route(); window.scrollTo(0, 0); }
window.addEventListener("popstate", route);

// navLink is an <a> to an in-page path.
function navLink(path, text) {
  const a = el("a", { href: path }, text);
  a.addEventListener("click", (e) => {
    if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault(); e.stopPropagation(); go(path);
  });
  return a;
}
const episodePath = (id) => "/web/episodes/" + encodeURIComponent(id);
function episodeLink(id) { return navLink(episodePath(id), id); }

const fmtTime = (t) => t ? new Date(t * 1000).toLocaleString() : "";
const fmtDur = (ms) => !ms ? "" : ms < 1000 ? Math.round(ms) + " ms" : ms < 60000 ? fmtNum(ms / 1000) + " s" : fmtNum(ms / 60000) + " min";

// ---- the episodes table ----
const epState = { sort: "-started", offset: 0, limit: 50 };

function episodesQuery() {
  const q = new URLSearchParams(location.search);
  const f = { q: $("ep-q").value.trim(), task: $("ep-task").value, status: $("ep-status").value,
    error_type: $("ep-error").value, reward_min: $("ep-rmin").value, reward_max: $("ep-rmax").value };
  for (const [k, v] of Object.entries(f)) if (v) q.set(k, v); else q.delete(k);
  q.set("sort", epState.sort);
  q.set("offset", epState.offset);
  q.set("limit", epState.limit);
  return q;
}

// loadEpisodes reads the filters from the address (on first load) and
// fetches the page of episodes they select.
let epWired = false;
// epLoads counts loadEpisodes calls: a response that arrives after a
// later call's request (a second sort click while the first's answer is
// on its way) is dropped, not shown over the later one's.
let epLoads = 0;
async function loadEpisodes(fromForm) {
  const load = ++epLoads;
  if (!epWired) wireEpisodes();
  if (!fromForm) {
    const q = new URLSearchParams(location.search);
    $("ep-q").value = q.get("q") || "";
    $("ep-rmin").value = q.get("reward_min") || "";
    $("ep-rmax").value = q.get("reward_max") || "";
    epState.sort = q.get("sort") || "-started";
    epState.offset = +q.get("offset") || 0;
    epState.want = { task: q.get("task") || "", status: q.get("status") || "", error_type: q.get("error_type") || "" };
  }
  const q = episodesQuery();
  if (epState.want) for (const [k, v] of Object.entries(epState.want)) if (v) q.set(k, v);
  history.replaceState(null, "", "/web/episodes?" + q.toString());
  try {
    const r = await api("/web/api/episodes?" + q.toString());
    if (load === epLoads) renderEpisodes(r);
  } catch (e) { if (load === epLoads) $("ep-range").textContent = String(e.message || e); }
}

function wireEpisodes() {
  epWired = true;
  $("ep-filters").addEventListener("submit", (e) => { e.preventDefault(); epState.offset = 0; epState.want = null; loadEpisodes(true); });
  for (const id of ["ep-task", "ep-status", "ep-error"]) $(id).addEventListener("change", () => { epState.offset = 0; epState.want = null; loadEpisodes(true); });
  for (const b of document.querySelectorAll("#episodes th button")) {
    b.addEventListener("click", () => {
      const k = b.dataset.sort;
      epState.sort = epState.sort === "-" + k ? k : "-" + k;
      epState.offset = 0;
      epState.want = null;
      loadEpisodes(true);
    });
  }
  $("ep-prev").addEventListener("click", () => { epState.offset = Math.max(0, epState.offset - epState.limit); epState.want = null; loadEpisodes(true); });
  $("ep-next").addEventListener("click", () => { epState.offset += epState.limit; epState.want = null; loadEpisodes(true); });
}

function fillSelect(id, facets, want) {
  const s = $(id), cur = want !== undefined && want !== null ? want : s.value;
  s.replaceChildren(el("option", { value: "" }, "any"));
  if (id === "ep-error") s.append(el("option", { value: "none" }, "none"));
  for (const f of facets || []) if (f.value) s.append(el("option", { value: f.value }, f.value + " (" + f.count + ")"));
  s.value = cur;
  if (s.value !== cur && cur) { s.append(el("option", { value: cur }, cur)); s.value = cur; }
}

function renderEpisodes(r) {
  const w = epState.want || {};
  fillSelect("ep-task", r.facets.task, w.task);
  fillSelect("ep-status", r.facets.status, w.status);
  fillSelect("ep-error", r.facets.error_type, w.error_type);
  epState.want = null;
  const key = epState.sort.replace(/^-/, ""), desc = epState.sort.startsWith("-");
  for (const b of document.querySelectorAll("#episodes th button")) {
    b.classList.toggle("asc", b.dataset.sort === key && !desc);
    b.classList.toggle("desc", b.dataset.sort === key && desc);
  }
  const body = $("episodes").tBodies[0];
  const rows = r.episodes.map((e) => el("tr", { "data-episode": e.id, class: e.depth ? "branch" : "" },
    idCell(e), el("td", { class: "ep-task" }, e.task || ""), el("td", {}, e.agent || ""),
    el("td", { class: "ep-status status-" + e.status }, e.status + (e.live ? " (live)" : "")),
    el("td", { class: "num ep-reward" }, e.reward === null ? "—" : fmtNum(e.reward)), el("td", { class: "num ep-turns" }, e.turns),
    el("td", { class: "num" }, fmtDur(e.duration_ms)), el("td", { class: "num ep-tokens" }, e.tokens || ""),
    el("td", { class: "ep-error" }, e.error_type || ""), el("td", { class: "ep-started" }, fmtTime(e.started))));
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: "10", class: "hint" }, r.indexed ? "no episode matches" : r.record_dir ? "no episodes yet" : "no episodes (record_dir is not configured)")));
  body.replaceChildren(...rows);
  const from = r.total ? r.offset + 1 : 0, to = Math.min(r.offset + r.limit, r.total);
  $("ep-range").textContent = from + "–" + to + " of " + r.total + (r.total !== r.indexed ? " (" + r.indexed + " episodes in all)" : "") + (r.index_error ? " · index: " + r.index_error : "");
  $("ep-prev").disabled = r.offset === 0;
  $("ep-next").disabled = to >= r.total;
  if (window.firstEpisodesRender === undefined) window.firstEpisodesRender = performance.now();
}

// idCell is an episodes row's id: a fork's sibling indented under its
// parent with a branch marker and "forked from … at turn k", a parent with
// the count of its forks.
function idCell(e) {
  const td = el("td", { class: "ep-id" });
  if (e.depth) td.style.paddingLeft = (0.4 + 1.2 * e.depth) + "em";
  if (e.forked_from) td.append(el("span", { class: "branch-marker", title: "a fork's sibling" }, "↳ "));
  td.append(episodeLink(e.id));
  if (e.forked_from) {
    td.append(el("div", { class: "forked-from hint" }, "forked from ", episodeLink(e.forked_from.parent_episode_id), " at turn " + e.forked_from.at_turn +
      (e.forked_from.mechanism ? " (" + e.forked_from.mechanism + ")" : "")));
  }
  if (e.forks) td.append(el("span", { class: "badge forks" }, e.forks + (e.forks === 1 ? " fork" : " forks")));
  return td;
}

// lineage shows where an episode was forked from and the siblings forked
// from it, each a link to its episode page.
function lineage(r) {
  const box = el("div", { id: "ep-lineage" });
  const o = r.forked_from;
  if (o) box.append(el("p", { class: "forked-from" }, el("span", { class: "branch-marker" }, "↳ "), "forked from ", episodeLink(o.parent_episode_id),
    " at turn " + o.at_turn + (o.mechanism ? " (" + o.mechanism + ")" : "") + " · session " + o.parent_session_id));
  const forks = r.forks || [];
  if (forks.length) {
    box.append(el("p", { class: "label" }, forks.length + (forks.length === 1 ? " sibling" : " siblings") + " forked from this episode:"),
      el("ul", { class: "forks" }, ...forks.map((f) => el("li", { "data-episode": f.episode_id }, episodeLink(f.episode_id),
        " at turn " + f.at_turn + (f.mechanism ? " (" + f.mechanism + ")" : "") + (f.live ? " · live in session " + f.session_id : "")))));
  }
  return box;
}

// ---- one episode ----
// epPageLoads counts loadEpisodePage calls: an episode's answer arriving
// after another episode was opened is dropped, not shown under it.
let epPageLoads = 0;
async function loadEpisodePage(id) {
  const load = ++epPageLoads;
  $("ep-title").textContent = "Episode " + id;
  for (const k of ["ep-summary", "ep-task-body", "ep-grade-body", "ep-turns", "ep-tokens"]) $(k).replaceChildren();
  let r;
  try { r = await api("/web/api/episodes/" + encodeURIComponent(id)); }
  catch (e) { if (load === epPageLoads) $("ep-summary").append(el("p", { class: "item error" }, String(e.message || e))); return; }
  if (load === epPageLoads) renderEpisodePage(r);
}

// canonical is JSON with sorted keys, to compare tool arguments.
function canonical(v) {
  if (typeof v === "string") { try { v = JSON.parse(v); } catch { return JSON.stringify(v); } }
  if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
  if (v && typeof v === "object") return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canonical(v[k])).join(",") + "}";
  return JSON.stringify(v === undefined ? null : v);
}
// joinTools pairs a turn's tool calls into one entry per call: the
// harness's own tool_call (with its tool_result, by call_id) and the
// bridge's (with its result, by the bridge's call_id), matched in order by
// tool name and equal arguments, else by tool name alone. A harness name
// names a bridge tool (its tool_name or upstream_name) that it equals or
// ends with after "_", ".", or "/" (Claude Code spells the bridge's add as
// mcp__harnessd__add, others server.add or server/add).
function joinTools(events) {
  const calls = { harness: [], bridge: [] };
  const results = new Map();
  for (const e of events) {
    const side = e.source === "bridge" ? "bridge" : "harness";
    if (e.type === "tool_call") calls[side].push({ call: e, result: null });
    if (e.type === "tool_result") results.set(side + "|" + ((e.data || {}).call_id || ""), e);
  }
  for (const side of ["harness", "bridge"]) {
    for (const c of calls[side]) {
      const id = (c.call.data || {}).call_id;
      if (id && results.has(side + "|" + id)) { c.result = results.get(side + "|" + id); results.delete(side + "|" + id); }
    }
  }
  // The bridge's calls indexed by each name they answer to (and with
  // their arguments): a harness call takes the first unused one of the
  // names it answers to, without comparing every harness call with every
  // bridge call (a harness's thousands of calls of one name made that a
  // minute of the page's only thread).
  const used = new Set(), byName = new Map(), byArgs = new Map();
  const index = (m, k, i) => { let q = m.get(k); if (!q) m.set(k, q = { at: 0, list: [] }); q.list.push(i); };
  calls.bridge.forEach((x, i) => {
    const d = x.call.data || {}, key = canonical(d.arguments || {});
    for (const n of new Set([d.tool_name, d.upstream_name].filter(Boolean))) { index(byName, n, i); index(byArgs, n + "\u0000" + key, i); }
  });
  const first = (m, k) => { // the first unused bridge call listed under k
    const q = m.get(k);
    if (!q) return Infinity;
    while (q.at < q.list.length && used.has(calls.bridge[q.list[q.at]])) q.at++;
    return q.at < q.list.length ? q.list[q.at] : Infinity;
  };
  // names h answers to: itself and what follows a "_", "." or "/" in it,
  // of the lengths the bridge's names have.
  const lengths = new Set([...byName.keys()].map((n) => n.length));
  const names = (h) => {
    const out = [h];
    for (const l of lengths) if (l < h.length && "_./".includes(h[h.length - l - 1])) out.push(h.slice(h.length - l));
    return out;
  };
  const entries = [];
  for (const h of calls.harness) {
    const hd = h.call.data || {}, ns = names(hd.tool_name || ""), key = canonical(hd.arguments || {});
    let i = Math.min(...ns.map((n) => first(byArgs, n + "\u0000" + key)));
    let how = "tool name and arguments";
    if (i === Infinity) { i = Math.min(...ns.map((n) => first(byName, n))); how = "tool name, in order"; }
    const b = i === Infinity ? null : calls.bridge[i];
    if (b) used.add(b);
    entries.push({ harness: h, bridge: b, how: b ? how : "harness only", at: h.call.timestamp });
  }
  for (const b of calls.bridge) if (!used.has(b)) entries.push({ harness: null, bridge: b, how: "bridge only", at: b.call.timestamp });
  // Results whose call was not seen (a truncated turn).
  for (const [k, res] of results) entries.push({ harness: k.startsWith("harness") ? { call: null, result: res } : null, bridge: k.startsWith("bridge") ? { call: null, result: res } : null, how: "result only", at: res.timestamp });
  return entries;
}

function toolSide(name, s) {
  const box = el("div", { class: "side side-" + name }, el("span", { class: "label" }, name === "bridge" ? "bridge-side" : "harness-side"));
  if (!s) { box.append(el("span", { class: "hint" }, "not seen")); return box; }
  const c = s.call, r = s.result, rd = (r && r.data) || {};
  const parts = [];
  if (c) parts.push("called " + new Date(c.timestamp * 1000).toISOString().slice(11, 23));
  if (typeof rd.duration_ms === "number") parts.push(fmtNum(rd.duration_ms) + " ms (measured by the bridge)");
  else if (c && r) parts.push(fmtNum((r.timestamp - c.timestamp) * 1000) + " ms call to result");
  if (!r) parts.push("no result");
  box.append(el("span", { class: "tool-timing" }, parts.join(" · ")));
  if (r && rd.error) box.append(el("span", { class: "badge bad" }, "failed"));
  return box;
}

function toolEntry(t) {
  const any = (t.bridge && (t.bridge.call || t.bridge.result)) || (t.harness && (t.harness.call || t.harness.result));
  const d = any.data || {};
  const item = el("div", { class: "item tool tool-entry" }, el("span", { class: "label" }, "tool call"), el("strong", { class: "tool-name" }, d.tool_name || "?"),
    el("span", { class: "badge match" }, t.how));
  item.append(el("div", {}, toolSide("harness", t.harness), toolSide("bridge", t.bridge)));
  const call = (t.bridge && t.bridge.call) || (t.harness && t.harness.call);
  if (call) item.append(el("pre", { class: "tool-args" }, pretty((call.data || {}).arguments || {})));
  const res = (t.bridge && t.bridge.result) || (t.harness && t.harness.result);
  if (res) { const r = res.data || {}; item.append(el("pre", { class: "tool-result" }, r.error ? r.error : pretty(r.result))); }
  return item;
}

// thinkingOf collects a turn's reasoning: thought chunks and thinking
// blocks of the model's answers.
function thinkingOf(events) {
  let text = "";
  for (const e of events) {
    const d = e.data || {};
    if (e.type === "llm_chunk" && d.thought) text += d.content || "";
    if (e.type === "llm_response" && Array.isArray(d.content)) {
      for (const b of d.content) if (b && (b.type === "thinking" || b.type === "reasoning")) text += (text ? "\n" : "") + (b.thinking || b.text || "");
    }
  }
  return text;
}

// maxPageTurnItems bounds the items one turn of the episode page draws: a
// harness reports up to 50,000 events a turn, and drawing each held the
// page for seconds a turn (the record file has them all).
const maxPageTurnItems = 2000;

function renderEpisodePage(r) {
  const recs = r.records || [];
  const reset = recs.find((x) => x.kind === "reset") || {};
  const obs = recs.filter((x) => x.kind === "observation" && x.observation).map((x) => x.observation);
  const first = obs[0] ? obs[0].metadata || {} : {};
  const last = obs.length ? obs[obs.length - 1] : null;
  const lm = last ? last.metadata || {} : {};
  $("ep-title").textContent = "Episode " + (reset.episode_id || r.episode_id);
  const sumBits = [r.live ? "live in session " + r.session_id : r.record ? "record file " + r.record : "", reset.config && "environment " + reset.config,
    reset.agent && "agent " + reset.agent, reset.adapter && "adapter " + reset.adapter, reset.isolation && "isolation " + reset.isolation,
    "tools: " + ((reset.tools || []).join(", ") || "none"), reset.time && "started " + fmtTime(reset.time),
    recs.length > 1 && reset.time ? "duration " + fmtDur((recs[recs.length - 1].time - reset.time) * 1000) : ""].filter(Boolean);
  $("ep-summary").append(el("p", { class: "label" }, sumBits.join(" · ")), lineage(r));
  if (r.omitted) $("ep-summary").append(el("p", { class: "hint" }, "Turns 1–" + r.omitted.last_turn + " are no longer kept by the session" + (r.omitted.record_file ? ": see the record file " + r.omitted.record_file : "") + "."));
  if (r.error) $("ep-summary").append(el("p", { class: "item error" }, r.error));

  const tb = $("ep-task-body");
  const taskID = first.task_id || lm.task_id;
  if (taskID || first.task_instruction) {
    tb.append(el("div", {}, el("span", { class: "label" }, "id"), el("strong", { id: "ep-task-id" }, taskID || "")));
    if (first.task_instruction) tb.append(el("span", { class: "label" }, "instruction"), el("pre", { id: "ep-task-instruction" }, first.task_instruction));
    if (first.task_metadata) tb.append(el("span", { class: "label" }, "metadata"), el("pre", {}, pretty(first.task_metadata)));
  } else tb.append(el("p", { class: "hint" }, "no task: the environment serves no taskset"));

  const gb = $("ep-grade-body");
  if (last) {
    gb.append(el("div", {}, el("span", { class: "label" }, "reward"), el("strong", { id: "ep-reward", class: "reward" }, last.reward === null || last.reward === undefined ? "—" : fmtNum(last.reward)),
      last.done ? el("span", { class: "badge" }, "done") : el("span", { class: "badge" }, "not done")));
    if (lm.error_type) gb.append(el("div", { class: "error-type" }, el("span", { class: "label" }, "error_type"), el("strong", {}, lm.error_type), lm.error ? " " + lm.error : ""));
    if (lm.exit) gb.append(el("div", {}, el("span", { class: "label" }, "harness exit"), "code " + lm.exit.code + (lm.exit.signal ? ", signal " + lm.exit.signal : "")));
    if (lm.stderr_tail) gb.append(el("span", { class: "label" }, "harness stderr tail"), el("pre", {}, lm.stderr_tail));
    for (const d of lm.reward_details || []) {
      gb.append(el("div", { class: "rubric" }, el("span", { class: "label" }, "rubric " + d.name + " (" + d.type + ", weight " + fmtNum(d.weight) + ")"),
        d.score === null ? el("span", { class: "badge bad" }, "no score: " + (d.error || "")) : el("span", { class: "reward" }, fmtNum(d.score)), d.detail ? el("span", { class: "label" }, " " + d.detail) : null));
    }
    const g = lm.grade;
    if (g) {
      gb.append(el("div", { id: "ep-grade" }, el("span", { class: "label" }, "tests"),
        "reward " + (g.reward === null ? "—" : fmtNum(g.reward)) + (g.exit ? " · exit " + g.exit.code + (g.exit.signal ? " (" + g.exit.signal + ")" : "") : "") +
        " · " + fmtDur(g.duration_ms || 0.001) + (g.timed_out ? " · timed out" : "") + (g.limit ? " · hit " + g.limit : "")));
      if (g.error) gb.append(el("div", { class: "item error" }, g.error));
      if (g.scores) gb.append(el("pre", {}, pretty(g.scores)));
      gb.append(el("span", { class: "label" }, "stdout tail"), el("pre", { id: "ep-grade-stdout" }, g.stdout_tail || ""));
      gb.append(el("span", { class: "label" }, "stderr tail"), el("pre", { id: "ep-grade-stderr" }, g.stderr_tail || ""));
    } else if (!(lm.reward_details || []).length) gb.append(el("p", { class: "hint" }, "not graded"));
  } else gb.append(el("p", { class: "hint" }, "no observation yet"));

  // The turns.
  const turns = new Map();
  const turn = (n) => { if (!turns.has(n)) turns.set(n, { message: null, events: [], obs: null }); return turns.get(n); };
  for (const x of recs) {
    if (x.kind === "message") turn(x.turn).message = x.content;
    else if (x.kind === "event" && x.event) turn(x.event.turn || 0).events.push(x.event);
    else if (x.kind === "observation" && x.observation) turn(x.turn || (x.observation.metadata || {}).turn_number || 0).obs = x.observation;
    else if (x.kind === "workspace" && x.workspace) turn(x.turn).workspace = x.workspace;
  }
  const box = $("ep-turns");
  const models = new Map(); // call_index -> llm_response data
  for (const n of [...turns.keys()].sort((a, b) => a - b)) {
    if (n === 0) continue;
    const t = turns.get(n);
    const art = el("article", { class: "turn", "data-turn": n }, el("h3", {}, "Turn " + n));
    if (t.message !== null) art.append(el("div", { class: "item message" }, el("span", { class: "label" }, "message"), el("pre", {}, t.message)));
    const thinking = thinkingOf(t.events);
    if (thinking) art.append(el("details", { class: "thinking" }, el("summary", {}, "thinking (" + thinking.length + " characters)"), el("pre", {}, thinking)));
    // Each joined tool call shows where its first side's call (or result) is.
    const firstOf = new Map(), pos = new Map(t.events.map((e, i) => [e, i]));
    for (const tl of joinTools(t.events)) {
      const evs = [tl.harness && tl.harness.call, tl.bridge && tl.bridge.call, tl.harness && tl.harness.result, tl.bridge && tl.bridge.result].filter(Boolean);
      const at = evs.reduce((a, b) => (pos.get(b) < pos.get(a) ? b : a));
      firstOf.set(at, tl);
    }
    let items = 0, hidden = 0;
    for (const e of t.events) {
      const d = e.data || {};
      if (firstOf.has(e) || ["text_output", "llm_response", "error"].includes(e.type)) {
        if (items >= maxPageTurnItems) {
          if (e.type === "llm_response" && d.call_index) models.set(d.call_index, d); // the token table keeps it
          hidden++;
          continue;
        }
        items++;
      }
      if (firstOf.has(e)) art.append(toolEntry(firstOf.get(e)));
      else if (e.type === "text_output") art.append(el("div", { class: "item text" }, el("span", { class: "label" }, "harness text"), el("pre", { class: "harness-text" }, d.text || "")));
      else if (e.type === "llm_response") { if (d.call_index) models.set(d.call_index, d); art.append(modelItem(e, t.events)); }
      else if (e.type === "error") art.append(el("div", { class: "item error" }, el("span", { class: "label" }, "error (" + e.source + ")"), el("pre", {}, d.message || pretty(d))));
    }
    if (hidden) art.append(el("p", { class: "hint turn-cut" }, "… " + hidden + " more events of this turn are not shown (the record file has them)."));
    if (t.obs) art.append(obsItem(t.obs));
    if (t.workspace) art.append(workspaceItem(t.workspace));
    box.append(art);
  }
  renderTokens(r.export, models, r.export_note);
}

// workspaceItem lists the workspace paths a turn changed.
function workspaceItem(w) {
  const ch = w.changed || [];
  const item = el("div", { class: "item workspace" }, el("span", { class: "label" }, "workspace: " + (ch.length + (w.more || 0)) + " paths changed" +
    (w.more ? " (" + w.more + " not listed)" : "") + " · " + w.walked + " entries walked" + (w.partial ? " (walk cut short: changes deeper may be missing)" : "")));
  if (ch.length) item.append(el("ul", { class: "changed" }, ...ch.map((p) => el("li", {}, p))));
  return item;
}

// renderTokens shows each model call's tokens from the training export:
// its spans of the chain (prompt and context masked, completion trained on),
// the loss mask as the colour, each token's id and logprob in its title.
const maxTokensShown = 4000;
function renderTokens(ex, models, note) {
  const box = $("ep-tokens");
  if (!ex || !Array.isArray(ex.chains)) { box.append(el("p", { class: "hint" }, note ? "no training export: " + note : "no training export for this episode")); return; }
  for (const c of ex.calls || []) {
    const call = el("div", { class: "item model token-call", "data-call": c.call_index },
      el("span", { class: "label" }, "call #" + c.call_index + " · turn " + c.turn + " · " + c.prompt_tokens + " prompt + " + c.completion_tokens + " completion tokens" +
        (c.chain ? " · chain " + c.chain : " · in no chain") + (c.latency_ms ? " · " + fmtNum(c.latency_ms) + " ms" : "") + (c.error ? " · " + c.error : "")));
    const m = models.get(c.call_index);
    if (m && m.content !== undefined) call.append(el("span", { class: "label" }, "completion as the engine decoded it"), el("pre", { class: "decoded" }, pretty(m.content)));
    const chain = (ex.chains || []).find((ch) => ch.id === c.chain);
    if (chain) {
      const toks = el("div", { class: "tokens" });
      let shown = 0, hidden = 0;
      for (const sp of chain.spans || []) {
        if (sp.call_index !== c.call_index) continue;
        toks.append(el("span", { class: "label" }, sp.kind + " " + sp.start + "–" + sp.end + ":"));
        for (let i = sp.start; i < sp.end; i++) {
          if (shown >= maxTokensShown) { hidden++; continue; }
          const mask = chain.loss_mask[i], lp = chain.logprobs[i];
          toks.append(el("span", { class: "tok m" + mask, title: "#" + i + " id " + chain.input_ids[i] + " · loss mask " + mask + (lp === null || lp === undefined ? "" : " · logprob " + lp) }, chain.input_ids[i]), " ");
          shown++;
        }
      }
      if (hidden) toks.append(el("span", { class: "hint" }, " … " + hidden + " more tokens not shown"));
      call.append(toks);
    }
    box.append(call);
  }
  for (const is of ex.issues || []) box.append(el("div", { class: "item" + (is.severity === "fatal" ? " error" : "") }, el("span", { class: "label" }, is.severity + " " + is.code), is.message));
}

// ---- the overview ----
async function loadOverview() {
  let r;
  try { r = await api("/web/api/overview"); }
  catch (e) { $("ov-summary").textContent = String(e.message || e); return; }
  $("ov-summary").textContent = r.episodes + " episodes · pass: reward ≥ " + fmtNum(r.pass_mark) + (r.index_error ? " · index: " + r.index_error : "");
  const put = (id, node, note) => { const f = $(id); f.replaceChildren(f.querySelector("figcaption") || el("figcaption", {}, id), node); if (note) f.append(el("p", { class: "hint" }, note)); };
  // Without records, or when the index failed, the lists may be absent.
  const rewards = r.rewards || [], tasks = r.tasks || [], errorTypes = r.error_types || [];
  put("ov-reward", rewardChart(rewards, 10), rewards.length + " rewarded episodes, moving average over 10");
  put("ov-pass", barChart(tasks.map((t) => ({ label: t.task || "(no task)", value: t.rate, text: t.passed + "/" + t.graded + " (" + Math.round(t.rate * 100) + "%)" })), 1));
  put("ov-errors", barChart(errorTypes.map((f) => ({ label: f.value, value: f.count, text: String(f.count) }))));
  const hist = (id, h, unit, what) => {
    h = h || { n: 0, counts: [], le: [] };
    put(id, barChart(histogramRows(h, unit)), h.n ? h.n + " " + what + " · p50 " + unit(h.p50) + " · p95 " + unit(h.p95) : "no " + what);
  };
  hist("ov-turn", r.turn_latency_ms, fmtMS, "turns");
  hist("ov-model", r.model_latency_ms, fmtMS, "model calls");
  hist("ov-tokens", r.tokens, fmtTokens, "episodes with token counts");
  window.overviewDrawn = true;
}

// The header's links route in the page too.
for (const a of document.querySelectorAll("nav a")) {
  a.addEventListener("click", (e) => {
    if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault(); go(a.getAttribute("href"));
  });
}
