// The console's code: a file, not an inline <script>, so the page's
// Content-Security-Policy (script-src 'self') needs no 'unsafe-inline'.
"use strict";
// Each chart plots per-second deltas of counters from /api/state against
// wall-clock time (uPlot: time axis, per-second axis, values of every
// series at the cursor in the legend). The data-points and data-total
// attributes let a browser test check that data arrived without reading
// pixels. Every value from the feed is set as text, never parsed as HTML:
// lock and key names come from Redis, which anyone who can write to it
// chooses.
const COLORS = ["#0969da", "#1a7f37", "#cf222e", "#9a6700", "#8250df", "#bf3989", "#57606a"];
const WINDOW = 120; // seconds kept
const charts = {
  cache:   { series: ["hit", "L1 hit", "miss", "stale", "negative"] },
  db:      { series: ["cache loads", "main pool acquires", "reports pool acquires"] },
  locks:   { series: ["acquired", "contended", "wait timeout", "lost", "shared waits"] },
  refused: { series: ["shed", "rate limited", "concurrency", "breaker open"] },
};
const fmt = v => v == null ? "–" : (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

function chartWidth(el) { return Math.max(300, el.clientWidth); }

for (const [id, c] of Object.entries(charts)) {
  const el = document.getElementById(id);
  c.el = el;
  c.xs = [];
  c.data = c.series.map(() => []);
  c.total = 0;
  c.plot = new uPlot({
    width: chartWidth(el), height: 190,
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
    axes: [
      // Whole seconds at least: the feed is polled once a second.
      { stroke: "#59636e", grid: { stroke: "#eef1f4" }, incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600] },
      { stroke: "#59636e", grid: { stroke: "#eef1f4" }, size: 52, values: (u, vals) => vals.map(v => fmt(v)) },
    ],
    series: [{ label: "time", value: "{HH}:{mm}:{ss}" }].concat(c.series.map((s, i) => ({
      label: s, stroke: COLORS[i], width: 1.5, value: (u, v) => fmt(v) + "/s",
    }))),
  }, [[]].concat(c.series.map(() => [])), el);
}
window.addEventListener("resize", () => {
  for (const c of Object.values(charts)) c.plot.setSize({ width: chartWidth(c.el), height: 190 });
});

function counters(st) {
  const pool = n => st.pools.find(p => p.name === n) || {};
  const sum = (prefix) => Object.entries(st.refused)
    .filter(([k]) => k.startsWith(prefix + "/")).reduce((a, [, v]) => a + v, 0);
  const c = st.cache;
  return {
    cache: [c.Hits, c.L1Hits, c.Misses, c.Stales, c.Negatives],
    db: [c.Loads, pool("main").acquires || 0, pool("reports").acquires || 0],
    locks: [c.LockAcquired, c.LockContended, c.LockTimeouts, c.LockLost, c.SharedWaits],
    refused: [sum("shed") + st.pools.reduce((a, p) => a + p.shed, 0), sum("rate_limited"),
              sum("concurrency"), st.pools.reduce((a, p) => a + p.circuit_open, 0)],
    // The ratio: requests served against database queries (every query
    // takes a connection from a pool).
    ratio: [st.requests || 0, st.pools.reduce((a, p) => a + p.acquires, 0)],
  };
}

// table renders rows of cells; the first row is the header. A cell is a
// value or {text, cls} for a styled span. Text only, never HTML.
function table(id, rows) {
  document.getElementById(id).replaceChildren(...rows.map(r => {
    const tr = document.createElement("tr");
    for (const x of r) {
      const td = document.createElement("td");
      if (x !== null && typeof x === "object") {
        const span = document.createElement("span");
        span.className = String(x.cls);
        span.textContent = String(x.text);
        td.append(span);
      } else {
        td.textContent = String(x);
      }
      tr.append(td);
    }
    return tr;
  }));
}

function settings(list) {
  document.getElementById("settings").replaceChildren(...(list || []).map(s => {
    const span = document.createElement("span"), b = document.createElement("b");
    b.textContent = String(s.value === "" ? "–" : s.value);
    span.append(String(s.name) + "=", b);
    return span;
  }));
  const mode = (list || []).find(s => s.name === "CACHE_MODE");
  document.getElementById("mode").textContent = "CACHE_MODE=" + (mode ? String(mode.value) : "?");
}

let prev = null;
const ratioHist = []; // [seconds, requests, queries] of the last 5 ticks
async function tick() {
  try {
    const st = await (await fetch("api/state", { cache: "no-store" })).json();
    const now = counters(st);
    if (prev) {
      const secs = Math.max(0.001, (st.time_ms - prev.time) / 1000);
      for (const id of Object.keys(charts)) {
        const c = charts[id];
        c.xs.push(st.time_ms / 1000);
        now[id].forEach((v, i) => {
          const d = Math.max(0, v - prev.values[id][i]);
          c.total += d;
          c.data[i].push(d / secs);
        });
        if (c.xs.length > WINDOW) { c.xs.shift(); c.data.forEach(s => s.shift()); }
        c.plot.setData([c.xs].concat(c.data));
        // The legend shows the values under the cursor, else the latest.
        if (c.plot.cursor.idx == null) c.plot.setLegend({ idx: c.xs.length - 1 });
        c.el.dataset.points = String(c.xs.length);
        c.el.dataset.total = String(c.total);
      }
      ratioHist.push([secs, Math.max(0, now.ratio[0] - prev.values.ratio[0]), Math.max(0, now.ratio[1] - prev.values.ratio[1])]);
      if (ratioHist.length > 5) ratioHist.shift();
      const [s, r, q] = ratioHist.reduce((a, x) => [a[0] + x[0], a[1] + x[1], a[2] + x[2]], [0, 0, 0]);
      document.getElementById("req-rate").textContent = fmt(r / s);
      document.getElementById("db-rate").textContent = fmt(q / s);
      document.getElementById("saved").textContent = r === 0 ? "idle"
        : q === 0 ? "no query for " + r + " requests" : "1 query per " + fmt(r / q) + " requests";
    }
    prev = { time: st.time_ms, values: now };
    settings(st.settings);
    table("breakers", [["breaker", "state", "next probe", "failed probes"]].concat(Object.entries(st.breakers).sort()
      .map(([n, s]) => {
        const d = (st.breaker_detail || {})[n] || {};
        return [n, { text: s, cls: s }, s === "open" ? Number(d.next_probe_seconds).toFixed(2) + " s" : "–", Number(d.failed_probes ?? 0)];
      })));
    table("pools", [["pool", "acquired", "idle", "max", "waiting", "shed", "breaker refusals", "stmt timeouts"]]
      .concat(st.pools.map(p => [p.name, p.acquired, p.idle, p.max, p.waiting, p.shed, p.circuit_open, p.statement_timeouts])));
    const recent = st.recent_locks || [];
    table("recent", [["key", "fills", "releases", "last"]].concat(recent.length
      ? recent.map(l => [l.key, l.fills, l.releases, l.ago_ms + " ms ago"]) : [["none in the last 10 s", "", "", ""]]));
    table("holders", [["key", "ttl left"]].concat(st.locks.length
      ? st.locks.map(l => [l.key, l.ttl_ms + " ms"]) : [["none", ""]]));
    const top = st.top_keys || [];
    table("hot", [["key", "requests"]].concat(top.length ? top.map(k => [k.key, k.count]) : [["none", ""]]));
    const hot = st.hot_keys || [];
    table("hotkeys", [["key", "reads/s", "state"]].concat(hot.length ? hot.map(h =>
      [h.key, Number(h.per_second).toFixed(1), h.pinned ? "pinned (HOT_KEYS)" : h.hot ? "hot" : "watched"]) : [["none", "", ""]]));
    document.getElementById("status").textContent = "live · " + new Date(st.time_ms).toLocaleTimeString();
  } catch (e) {
    document.getElementById("status").textContent = "disconnected: " + e;
  }
}
tick();
setInterval(tick, 1000);
