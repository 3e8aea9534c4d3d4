// harnessd's web console: plain JavaScript, no library, no build step.
// Every piece of data is put into the page with textContent (never
// innerHTML), so text from a harness always shows as text.
"use strict";

const params = new URLSearchParams(location.search);
let token = params.get("token") || sessionStorage.getItem("harnessd-token") || "";
if (params.has("token")) {
  sessionStorage.setItem("harnessd-token", token);
  params.delete("token");
  const q = params.toString();
  history.replaceState(null, "", location.pathname + (q ? "?" + q : ""));
}
const withToken = (path) => token ? path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token) : path;

async function api(path, opts = {}) {
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const res = await fetch(path, Object.assign({ headers }, opts));
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.detail || res.status + " " + res.statusText);
  return body;
}

// el builds an element; children are nodes or strings (as text).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}
const pretty = (v) => typeof v === "string" ? v : JSON.stringify(v, null, 2);
const $ = (id) => document.getElementById(id);

const sessions = new Map(); // id -> summary
let view = null;            // {kind: "session"|"record", id, records}
const chat = { ws: null, episode: "", session: "", busy: false };

// ---- sessions table ----
function renderSessions() {
  const body = $("sessions").tBodies[0];
  body.replaceChildren();
  for (const s of sessions.values()) {
    const tr = el("tr", { tabindex: "0", "data-session": s.id },
      el("td", {}, s.forked_from ? el("span", { class: "branch-marker", title: "forked from session " + s.forked_from.parent_session_id + " at turn " + s.forked_from.at_turn }, "↳ ") : "",
        s.id + (s.id === chat.session ? " (chat)" : "")),
      el("td", {}, s.state), el("td", {}, s.episode_id ? episodeLink(s.episode_id) : ""),
      el("td", {}, s.turns), el("td", { class: "reward" }, s.last_reward === null ? "—" : fmtNum(s.last_reward)),
      el("td", {}, s.error_type || ""), el("td", {}, s.isolation));
    if (view && view.kind === "session" && view.id === s.id) tr.classList.add("selected");
    const open = () => openSession(s.id);
    tr.addEventListener("click", open);
    tr.addEventListener("keydown", (e) => { if (e.key === "Enter") open(); });
    body.append(tr);
  }
  if (sessions.size === 0) body.append(el("tr", {}, el("td", { colspan: "7", class: "hint" }, "no sessions")));
}
const fmtNum = (n) => typeof n === "number" ? (Math.round(n * 1000) / 1000).toString() : String(n);

async function openSession(id) {
  // Records the feed brings while the window is fetched wait in pending
  // and are merged into it: the window may already hold some of them, and
  // the rest are newer than it (dropping them lost a turn's events, or its
  // end, until the next reload).
  const pending = [];
  view = { kind: "session", id, records: [], pending };
  renderSessions();
  try {
    const r = await api("/web/api/sessions/" + encodeURIComponent(id) + "/episode");
    if (view.kind === "session" && view.id === id && view.pending === pending) {
      view.records = mergeRecords(r.records || [], pending);
      view.pending = null;
      view.omitted = r.omitted || null;
      renderEpisode();
    }
  } catch (e) {
    // Without the window, show what the feed brought (later records render
    // as they come), then the error (rendering redraws the episode's header).
    if (view.pending === pending) { view.records = pending; view.pending = null; renderEpisode(); }
    showError(e);
  }
}

// mergeRecords appends to a fetched window the feed's records that arrived
// while it was fetched and that it does not hold: a record is the same when
// its JSON is, and only the window's records from a second before the
// earliest pending one are compared. A pending reset starts the episode over.
function mergeRecords(win, pending) {
  if (!pending.length) return win;
  const from = pending.reduce((t, p) => Math.min(t, p.time), Infinity) - 1;
  const held = new Set();
  for (const w of win) if (w.time >= from) held.add(JSON.stringify(w));
  let out = win;
  for (const p of pending) {
    if (held.has(JSON.stringify(p))) continue;
    if (p.kind === "reset") out = [];
    out.push(p);
  }
  return out;
}

// loadRecordsSoon reloads the list at most once a second (the index is
// refreshed as often).
let recordsTimer = null;
function loadRecordsSoon() {
  if (recordsTimer) return;
  recordsTimer = setTimeout(() => { recordsTimer = null; loadRecords(); }, 1000);
}

// loadRecords lists the latest past episodes, each a link to its page.
async function loadRecords() {
  try {
    const r = await api("/web/api/episodes?limit=15");
    const ul = $("records");
    ul.replaceChildren();
    if (!r.episodes.length) ul.append(el("li", { class: "hint" }, r.record_dir ? "no record files yet" : "record_dir is not configured"));
    for (const e of r.episodes) {
      ul.append(el("li", {}, episodeLink(e.id), el("span", { class: "label" }, " " + [e.task, e.status, e.reward === null ? "" : "reward " + fmtNum(e.reward),
        e.turns + " turns", new Date(e.started * 1000).toLocaleString()].filter(Boolean).join(" · "))));
    }
    if (r.total > r.episodes.length) ul.append(el("li", {}, navLink("/web/episodes", "all " + r.total + " episodes…")));
  } catch (e) { showError(e); }
}

// firstTurn is the earliest turn of recs that has a message or an observation.
function firstTurn(recs) {
  for (const r of recs) if ((r.kind === "message" || r.kind === "observation") && r.turn > 0) return r.turn;
  return 0;
}

function showError(e) { $("episode-meta").replaceChildren(el("p", { class: "item error" }, String(e.message || e))); }

// ---- the episode timeline ----
// renderEpisodeSoon renders the timeline once for the records that arrived
// meanwhile: a harness reports up to 50,000 events a turn, each its own
// message of the feed, and rendering the whole timeline for each one made
// a flood of them (a second's work for the harness) hold the page's only
// thread for minutes.
let renderTimer = null;
function renderEpisodeSoon() {
  if (renderTimer) return;
  renderTimer = setTimeout(() => { renderTimer = null; if (view) renderEpisode(); }, 100);
}

// maxTurnItems bounds the events of one turn the live timeline shows (the
// turn's observation is always shown; the episode page and the record file
// have every event).
const maxTurnItems = 1000;

function renderEpisode() {
  if (renderTimer) { clearTimeout(renderTimer); renderTimer = null; }
  const recs = view.records;
  const reset = recs.find((r) => r.kind === "reset");
  $("episode-title").textContent = (view.kind === "record" ? "Recorded episode " : "Episode ") + (reset ? reset.episode_id : view.id);
  const meta = $("episode-meta");
  meta.replaceChildren();
  if (reset) {
    meta.append(el("p", { class: "label" }, [reset.config && "environment " + reset.config, reset.agent && "agent " + reset.agent,
      reset.adapter && "adapter " + reset.adapter, reset.isolation && "isolation " + reset.isolation,
      "tools: " + ((reset.tools || []).join(", ") || "none")].filter(Boolean).join(" · ")));
  }
  if (view.omitted) {
    // The daemon keeps a window of a long episode's latest turns in memory.
    const o = view.omitted;
    const where = o.record_file ? "they are in the record file " + o.record_file : "they were not recorded (record_dir is not configured)";
    meta.append(el("p", { class: "hint" }, "Turns 1–" + o.last_turn + " are no longer kept by the session: " + where + "."));
  }
  const turns = new Map(); // turn number -> {message, items, obs}
  const turn = (n) => { if (!turns.has(n)) turns.set(n, { message: null, events: [], obs: null }); return turns.get(n); };
  for (const r of recs) {
    if (r.kind === "message") turn(r.turn).message = r.content;
    else if (r.kind === "event" && r.event) turn(r.event.turn || 0).events.push(r.event);
    else if (r.kind === "observation" && r.observation) {
      const n = r.turn || (r.observation.metadata && r.observation.metadata.turn_number) || 0;
      turn(n).obs = r.observation;
    }
  }
  const tl = $("timeline");
  tl.replaceChildren();
  for (const n of [...turns.keys()].sort((a, b) => a - b)) tl.append(renderTurn(n, turns.get(n)));
  if (!turns.size) tl.append(el("p", { class: "hint" }, "no turns yet"));
}

function renderTurn(n, t) {
  const box = el("article", { class: "turn", "data-turn": n }, el("h3", {}, n === 0 ? "Reset" : "Turn " + n));
  if (t.message !== null) box.append(el("div", { class: "item message" }, el("span", { class: "label" }, "message"), el("pre", {}, t.message)));
  const results = new Map();
  for (const e of t.events) if (e.type === "tool_result" && e.data && e.data.call_id) results.set(e.data.call_id + "|" + e.source, e);
  const shown = new Set();
  let items = 0, hidden = 0;
  for (const e of t.events) {
    const d = e.data || {};
    if (e.type !== "llm_request" && e.type !== "turn_complete" && e.type !== "llm_chunk" && !(e.type === "tool_result" && shown.has(e))) {
      if (items >= maxTurnItems) { hidden++; continue; }
      items++;
    }
    switch (e.type) {
      case "text_output": box.append(el("div", { class: "item text" }, el("span", { class: "label" }, "harness text"), el("pre", { class: "harness-text" }, d.text || ""))); break;
      case "tool_call": {
        const res = d.call_id ? results.get(d.call_id + "|" + e.source) : null;
        if (res) shown.add(res);
        box.append(toolItem(e, res));
        break;
      }
      case "tool_result": if (!shown.has(e)) box.append(toolItem(null, e)); break;
      case "llm_request": break; // shown with its response
      case "llm_response": box.append(modelItem(e, t.events)); break;
      case "error": box.append(el("div", { class: "item error" }, el("span", { class: "label" }, "error (" + e.source + (d.recoverable ? ", recoverable" : "") + ")"), el("pre", {}, d.message || pretty(d)))); break;
      case "turn_complete": break;
      case "llm_chunk": break;
      case "env_event": box.append(el("div", { class: "item env-event" }, el("span", { class: "label" }, "environment event" + (d.name ? " " + d.name : "")),
        el("span", { class: "badge" }, d.trigger + (d.detail ? " " + d.detail : "") + " → " + d.effect + (d.delivery ? " (" + d.delivery + ")" : "")),
        d.fallback ? el("span", { class: "label" }, " " + d.fallback) : null, d.error ? el("span", { class: "badge bad" }, "failed") : null,
        el("pre", {}, d.error || d.text || d.path || d.tool || ""))); break;
      default: box.append(el("div", { class: "item" }, el("span", { class: "label" }, e.type), el("pre", {}, pretty(d))));
    }
  }
  if (hidden) {
    box.append(el("p", { class: "hint turn-cut" }, "… " + hidden + " more events of this turn are not shown here (the episode's page and its record file have them)."));
  }
  if (t.obs) box.append(obsItem(t.obs));
  return box;
}

function toolItem(call, res) {
  const c = (call || res).data || {}, src = (call || res).source;
  const item = el("div", { class: "item tool" }, el("span", { class: "label" }, "tool"), el("strong", { class: "tool-name" }, c.tool_name || "?"),
    el("span", { class: "badge" + (src === "bridge" ? " bridge" : "") }, src === "bridge" ? "bridge-side" : src));
  if (call) item.append(el("pre", { class: "tool-args" }, pretty(c.arguments || {})));
  if (res) {
    const r = res.data || {};
    if (r.error) item.append(el("span", { class: "badge bad" }, "failed"));
    if (typeof r.duration_ms === "number") item.append(el("span", { class: "label" }, " " + fmtNum(r.duration_ms) + " ms"));
    item.append(el("pre", { class: "tool-result" }, r.error ? r.error : pretty(r.result)));
  } else item.append(el("span", { class: "label" }, "no result"));
  return item;
}

function modelItem(e, events) {
  const d = e.data || {};
  const usage = d.usage || {};
  const tokens = Object.entries(usage).filter(([, v]) => typeof v === "number").map(([k, v]) => k + " " + v).join(", ");
  const item = el("div", { class: "item model" }, el("span", { class: "label" }, "model call" + (d.call_index ? " #" + d.call_index : "")),
    el("strong", {}, d.model || ""), el("span", { class: "badge" }, e.source),
    el("div", { class: "label" }, [tokens || "no token counts", typeof d.latency_ms === "number" ? fmtNum(d.latency_ms) + " ms" : "",
      d.finish_reason ? "finish " + d.finish_reason : "", d.traffic || ""].filter(Boolean).join(" · ")));
  if (d.error) item.append(el("pre", { class: "error" }, d.error));
  if (d.content !== undefined) item.append(el("pre", {}, pretty(d.content)));
  return item;
}

function obsItem(o) {
  const m = o.metadata || {};
  const item = el("div", { class: "item obs" + (m.error_type ? " failure" : "") }, el("span", { class: "label" }, "observation"),
    el("span", { class: "reward obs-reward" }, "reward " + (o.reward === null || o.reward === undefined ? "—" : fmtNum(o.reward))),
    o.done ? el("span", { class: "badge" }, "done") : null, m.harness_done ? el("span", { class: "badge" }, "harness done") : null,
    m.cancelled ? el("span", { class: "badge" }, "cancelled") : null);
  if (m.response !== undefined && m.response !== null) item.append(el("pre", {}, m.response));
  const cut = m.truncated || {};
  if (cut.response_bytes_dropped) {
    // The console keeps a live episode's turns within 16 MiB: a larger
    // turn is kept cut (the trainer and the record file have it whole).
    const byConsole = (cut.reason || "").split(",").includes("console_window");
    item.append(el("p", { class: "hint response-cut" }, "… " + fmtNum(cut.response_bytes_dropped) + " more bytes of the response are not shown" +
      (byConsole ? ": the console keeps at most 16 MiB of a live episode's turns (the record file has the whole response)" : "") + "."));
  }
  for (const d of m.reward_details || []) {
    item.append(el("div", { class: "rubric" }, el("span", { class: "label" }, "rubric " + d.name + " (" + d.type + ", weight " + fmtNum(d.weight) + ")"),
      d.score === null ? el("span", { class: "badge bad" }, "no score: " + (d.error || "")) : el("span", { class: "reward" }, fmtNum(d.score)),
      d.detail ? el("span", { class: "label" }, " " + d.detail) : null));
  }
  if (m.error_type) item.append(el("div", { class: "error-type" }, el("span", { class: "label" }, "error_type"), el("strong", {}, m.error_type), m.error ? " " + m.error : ""));
  if (m.exit) item.append(el("div", {}, el("span", { class: "label" }, "exit"), "code " + m.exit.code + (m.exit.signal ? ", signal " + m.exit.signal : "")));
  if (m.stderr_tail) item.append(el("div", {}, el("span", { class: "label" }, "stderr tail"), el("pre", {}, m.stderr_tail)));
  if (m.truncated) item.append(el("div", { class: "label" }, "events truncated: " + pretty(m.truncated)));
  return item;
}

// ---- the live feed ----
function connectFeed() {
  const src = new EventSource(withToken("/web/api/events"));
  src.onopen = () => { $("feed-status").textContent = "live"; };
  src.onerror = () => { $("feed-status").textContent = "reconnecting…"; };
  src.onmessage = (ev) => {
    let msg;
    try { msg = JSON.parse(ev.data); } catch { return; }
    switch (msg.type) {
      case "sessions":
        sessions.clear();
        for (const s of msg.sessions || []) sessions.set(s.id, s);
        renderSessions();
        break;
      case "session":
        sessions.set(msg.session.id, msg.session);
        if (chat.episode && !chat.session && msg.session.episode_id === chat.episode) adoptChatSession(msg.session.id);
        renderSessions();
        break;
      case "session_closed":
        sessions.delete(msg.session_id);
        renderSessions();
        loadRecords();
        break;
      case "record":
        if (msg.record.kind === "reset" || msg.record.kind === "observation") loadRecordsSoon(); // a new or grown record file
        if (view && view.kind === "session" && view.id === msg.session_id && view.pending) {
          view.pending.push(msg.record); // merged once the window is fetched
        } else if (view && view.kind === "session" && view.id === msg.session_id) {
          if (msg.record.kind === "reset") { view.records = []; view.omitted = null; }
          view.records.push(msg.record);
          // The daemon keeps a window of the latest 1,000 turns: past twice
          // that, reload the window rather than keep every turn here.
          if (msg.record.kind === "observation" && msg.record.turn > 0 &&
              msg.record.turn - firstTurn(view.records) >= 2000) { openSession(view.id); break; }
          renderEpisodeSoon();
        }
        break;
      case "dropped":
        $("feed-status").textContent = "live (" + msg.dropped + " updates dropped; reloaded)";
        if (view && view.kind === "session") openSession(view.id);
        break;
    }
  };
}

// ---- the chat box: its own session over /ws ----
function chatStatus(t) { $("chat-status").textContent = t; }
function setBusy(b) {
  chat.busy = b;
  $("chat-send").disabled = b || !chat.episode;
  $("chat-input").disabled = !chat.episode;
  $("chat-cancel").disabled = !b;
  $("chat-reset").disabled = b;
}
function adoptChatSession(id) { chat.session = id; openSession(id); }

function openSocket() {
  return new Promise((resolve, reject) => {
    if (chat.ws && chat.ws.readyState === WebSocket.OPEN) return resolve(chat.ws);
    const u = new URL(withToken("/ws"), location.href);
    u.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(u.href);
    ws.onopen = () => { chat.ws = ws; resolve(ws); };
    ws.onerror = () => reject(new Error("WebSocket /ws failed"));
    ws.onclose = () => {
      const p = chat.pending;
      chat.pending = null;
      if (p) p({ type: "error", data: { message: "connection closed" } });
      if (chat.ws === ws) { chat.ws = null; chat.session = ""; chat.episode = ""; setBusy(false); chatStatus("connection closed"); }
    };
    ws.onmessage = (ev) => { const f = JSON.parse(ev.data); const p = chat.pending; chat.pending = null; if (p) p(f); };
  });
}
function request(frame) {
  return new Promise((resolve) => { chat.pending = resolve; chat.ws.send(JSON.stringify(frame)); });
}

async function chatReset() {
  setBusy(true);
  chatStatus("starting the harness…");
  try {
    await openSocket();
    chat.session = "";
    const f = await request({ type: "reset", data: {} });
    if (f.type === "error") throw new Error(f.data.message);
    chat.episode = f.data.metadata.episode_id;
    const s = [...sessions.values()].find((x) => x.episode_id === chat.episode);
    if (s) adoptChatSession(s.id);
    chatStatus(f.data.done ? "episode ended at reset: " + (f.data.metadata.error_type || "") : "episode " + chat.episode.slice(0, 8) + " ready");
  } catch (e) { chatStatus(String(e.message || e)); }
  setBusy(false);
}

async function chatSend(ev) {
  ev.preventDefault();
  const text = $("chat-input").value;
  if (!text || !chat.ws) return;
  setBusy(true);
  chatStatus("turn running…");
  try {
    const f = await request({ type: "step", data: { message: text } });
    if (f.type === "error") throw new Error(f.data.message);
    $("chat-input").value = "";
    chatStatus("reward " + (f.data.reward === null ? "—" : fmtNum(f.data.reward)) + (f.data.done ? " · episode done" : ""));
    if (f.data.done) chat.episode = "";
  } catch (e) { chatStatus(String(e.message || e)); }
  setBusy(false);
}

async function chatCancel() {
  if (!chat.session) return;
  try { await api("/web/api/sessions/" + encodeURIComponent(chat.session) + "/cancel", { method: "POST" }); chatStatus("cancelling…"); }
  catch (e) { chatStatus(String(e.message || e)); }
}

// startLive opens the live view's feed and lists (once).
let liveStarted = false;
function startLive() {
  if (liveStarted) return;
  liveStarted = true;
  renderSessions();
  connectFeed();
  loadRecords();
}

document.addEventListener("DOMContentLoaded", () => {
  $("chat-reset").addEventListener("click", chatReset);
  $("chat").addEventListener("submit", chatSend);
  $("chat-cancel").addEventListener("click", chatCancel);
  $("chat-input").addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) $("chat").requestSubmit(); });
  route(); // pages.js
});
