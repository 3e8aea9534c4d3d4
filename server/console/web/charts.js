// harnessd console charts: small SVG charts drawn by the page itself (no
// library): a scatter with a moving average, and labelled bar charts. Every
// label is an SVG text node's textContent; values sit in data- attributes
// so tests (and people) can read what was drawn.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
function svg(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}
function svgTitle(node, text) { node.append(svg("title", {}, text)); return node; }

// movingAverage is the mean of each value and the window-1 before it.
function movingAverage(values, window) {
  const out = [];
  let sum = 0;
  for (let i = 0; i < values.length; i++) {
    sum += values[i];
    if (i >= window) sum -= values[i - window];
    out.push(sum / Math.min(i + 1, window));
  }
  return out;
}

// rewardChart draws points {started, reward, id} over time and their moving
// average over `window` episodes.
function rewardChart(points, window) {
  const W = 480, H = 200, L = 36, R = 8, T = 8, B = 22;
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "reward-chart", "data-points": points.length });
  if (!points.length) { s.append(svg("text", { x: L, y: H / 2 }, "no rewarded episodes")); return s; }
  const t0 = points[0].started, t1 = points[points.length - 1].started;
  const rs = points.map((p) => p.reward);
  const lo = Math.min(0, ...rs), hi = Math.max(1, ...rs);
  const x = (i) => L + (t1 > t0 ? (points[i].started - t0) / (t1 - t0) : points.length > 1 ? i / (points.length - 1) : 0.5) * (W - L - R);
  const y = (v) => T + (hi - v) / (hi - lo) * (H - T - B);
  s.append(svg("line", { class: "axis", x1: L, y1: y(lo), x2: W - R, y2: y(lo) }), svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: y(lo) }));
  for (const v of [lo, (lo + hi) / 2, hi]) s.append(svg("text", { x: 2, y: y(v) + 4 }, fmtNum(v)));
  s.append(svg("text", { x: L, y: H - 4 }, new Date(t0 * 1000).toLocaleString()));
  s.append(svg("text", { x: W - R, y: H - 4, "text-anchor": "end" }, new Date(t1 * 1000).toLocaleString()));
  points.forEach((p, i) => s.append(svgTitle(svg("circle", { class: "pt", cx: x(i), cy: y(p.reward), r: 2.5 }), p.id + ": reward " + fmtNum(p.reward))));
  const ma = movingAverage(rs, window);
  s.append(svgTitle(svg("polyline", { class: "ma", points: ma.map((v, i) => x(i).toFixed(1) + "," + y(v).toFixed(1)).join(" "),
    "data-last": fmtNum(ma[ma.length - 1]) }), "moving average over " + window + " episodes"));
  return s;
}

// barChart draws rows {label, value, text} as horizontal bars scaled to
// the largest value (or to max when given).
function barChart(rows, max) {
  const W = 480, rowH = 18, L = 150, R = 70;
  const H = Math.max(1, rows.length) * rowH + 4;
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "bar-chart", "data-rows": rows.length });
  if (!rows.length) { s.append(svg("text", { x: 4, y: 14 }, "nothing to show")); return s; }
  const top = max || Math.max(...rows.map((r) => r.value), 1e-9);
  rows.forEach((r, i) => {
    const yy = 2 + i * rowH;
    const g = svg("g", { class: "bar-row", "data-label": r.label, "data-value": r.value });
    g.append(svg("text", { x: L - 4, y: yy + 12, "text-anchor": "end", class: "bar-label" }, r.label.length > 24 ? r.label.slice(0, 23) + "…" : r.label));
    g.append(svgTitle(svg("rect", { class: "bar", x: L, y: yy + 2, height: rowH - 5, width: Math.max(0, r.value / top) * (W - L - R) }), r.label + ": " + r.text));
    g.append(svg("text", { x: L + Math.max(0, r.value / top) * (W - L - R) + 4, y: yy + 12, class: "bar-value" }, r.text));
    s.append(g);
  });
  return s;
}

// histogramRows turns a server histogram {le, counts} into bar rows with
// labels made by unit (a bound's label).
function histogramRows(h, unit) {
  const rows = [];
  let prev = 0;
  h.counts.forEach((n, i) => {
    const le = h.le[i];
    rows.push({ label: le === null ? "> " + unit(prev) : "≤ " + unit(le), value: n, text: String(n) });
    if (le !== null) prev = le;
  });
  return rows;
}
const fmtMS = (ms) => ms >= 1000 ? fmtNum(ms / 1000) + " s" : fmtNum(ms) + " ms";
const fmtTokens = (n) => n >= 1000 ? fmtNum(n / 1000) + "k" : String(n);
