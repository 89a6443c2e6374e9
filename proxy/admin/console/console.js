// mcring console. Polls the admin endpoint's JSON views every POLL_MS and redraws; the only
// requests that do something are the reload button (POST /reload, with the token if one is
// given) and the what-if (POST /whatif/<pool>, which mcring computes with `mcring plan`'s code
// and which changes nothing). Every value is put on the page as text (textContent), never HTML.
"use strict";

const POLL_MS = 2000;
const HOTKEYS_RETRY_POLLS = 30;  // after a 404, ask /hotkeys again this many polls later
const HOTKEYS_SHOWN = 10;  // per pool, hottest first (/hotkeys lists 20)
const SLOW_SHOWN = 10;  // newest first (/slow keeps 32)
const COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
                "#ff9da7", "#9c755f", "#bab0ac"];
const SVG = "http://www.w3.org/2000/svg";

const state = {
  previous: null,       // the last /backends answer and when it came: per-server rates
  rates: {},            // "pool/identity" -> {req, err, hit}
  colors: {},           // "pool/identity" -> colour, stable while the page is open
  hotkeysWait: 0,       // polls to skip before asking /hotkeys again
  pools: {},            // name -> {section, parts}
  whatifFilled: {},     // pool -> the server list the text box was filled with
  routesPrevious: null, // the last /routes requests counts and when they came: per-route rates
};

// ---- small helpers ------------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) {
    if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

function pct(f, digits = 1) {
  if (f === null || f === undefined || Number.isNaN(f)) return "–";
  if (f > 0 && f < 0.0005) return "<0.1%";
  return (100 * f).toFixed(digits) + "%";
}

function num(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  if (Math.abs(n) >= 1e9) return (n / 1e9).toFixed(2) + "G";
  if (Math.abs(n) >= 1e6) return (n / 1e6).toFixed(2) + "M";
  if (Math.abs(n) >= 1e4) return (n / 1e3).toFixed(1) + "k";
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

function micros(us) {
  if (!us) return "–";
  return us >= 1000 ? (us / 1000).toFixed(1) + " ms" : us + " µs";
}

function when(unixSeconds) {
  return new Date(unixSeconds * 1000).toLocaleString();
}

function duration(s) {
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
  return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
}

function colorOf(pool, identity) {
  const k = pool + "/" + identity;
  if (!(k in state.colors)) {
    const used = Object.keys(state.colors).filter((x) => x.startsWith(pool + "/")).length;
    state.colors[k] = COLORS[used % COLORS.length];
  }
  return state.colors[k];
}

function token() {
  return document.getElementById("token").value.trim();
}

function setStatus(text, cls) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = cls || "muted";
}

async function getJson(path) {
  const r = await fetch(path, {cache: "no-store"});
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}

// ---- one pool's section -------------------------------------------------------------------------

function poolSection(name) {
  if (state.pools[name]) return state.pools[name];
  const parts = {
    title: el("h2"),
    ring: svg("svg", {viewBox: "-100 -100 200 200", width: 180, height: 180, class: "ring",
                      role: "img"}),
    servers: el("tbody"),
    chart: svg("svg", {class: "chart", viewBox: "0 0 800 160"}),
    chartNote: el("div", {class: "muted"}),
    events: el("tbody"),
    warmup: el("div"),
    whatifText: el("textarea", {rows: 8, spellcheck: false}),
    whatifResult: el("div", {class: "result"}),
  };
  const planButton = el("button", {type: "button", text: "Plan this list"});
  const resetButton = el("button", {type: "button", text: "Reset to the ring in force"});
  planButton.addEventListener("click", () => runWhatIf(name));
  resetButton.addEventListener("click", () => {
    parts.whatifText.value = state.whatifFilled[name] || "";
  });
  const section = el("section", {class: "pool", "data-pool": name},
    parts.title,
    parts.warmup,
    el("div", {class: "ringrow"},
      el("div", {}, parts.ring, el("div", {class: "muted", text: "share of the key-hash space"})),
      el("table", {},
        el("thead", {}, el("tr", {},
          el("th", {text: "server"}), el("th", {class: "text", text: "address"}),
          el("th", {text: "state"}), el("th", {text: "weight"}), el("th", {text: "share"}),
          el("th", {text: "req/s"}), el("th", {text: "hit ratio"}), el("th", {text: "errors"}),
          el("th", {text: "err/s"}), el("th", {text: "p50"}), el("th", {text: "p99"}),
          el("th", {text: "distinct keys"}), el("th", {text: "items"}))),
        parts.servers)),
    el("h3", {text: "Hit ratio, per second, with membership changes"}),
    parts.chart,
    parts.chartNote,
    el("h3", {text: "Membership changes: predicted and observed cost"}),
    el("table", {},
      el("thead", {}, el("tr", {},
        el("th", {text: "#"}), el("th", {class: "text", text: "time"}),
        el("th", {class: "text", text: "change"}), el("th", {text: "predicted moved"}),
        el("th", {text: "modula would move"}), el("th", {text: "observed miss ratio"}),
        el("th", {text: "extra misses"}), el("th", {text: "recovery"}),
        el("th", {class: "text", text: "verdict"}))),
      parts.events),
    el("h3", {text: "What if: edit the server list, see what would move (mcring plan)"}),
    el("div", {class: "whatif"},
      el("div", {}, parts.whatifText, el("div", {}, planButton, " ", resetButton),
         el("div", {class: "muted",
                    text: "One server a line, as in the config (host:port:weight [name]). " +
                          "Computed by mcring against the ring in force; changes nothing."})),
      parts.whatifResult));
  document.getElementById("pools").append(section);
  state.pools[name] = {section, parts};
  return state.pools[name];
}

function drawRing(svgEl, pool, servers) {
  svgEl.replaceChildren();
  const live = servers.filter((s) => s.state === "up" && s.ownership > 0);
  let start = -Math.PI / 2;
  const r0 = 60, r1 = 95;
  for (const s of live) {
    const a = s.ownership * 2 * Math.PI;
    const end = start + a;
    const large = a > Math.PI ? 1 : 0;
    const p = (r, t) => (r * Math.cos(t)).toFixed(2) + " " + (r * Math.sin(t)).toFixed(2);
    const d = live.length === 1
      ? "M 0 -95 A 95 95 0 1 1 -0.01 -95 L -0.01 -60 A 60 60 0 1 0 0 -60 Z"
      : `M ${p(r1, start)} A ${r1} ${r1} 0 ${large} 1 ${p(r1, end)} L ${p(r0, end)} ` +
        `A ${r0} ${r0} 0 ${large} 0 ${p(r0, start)} Z`;
    svgEl.append(svg("path", {d, fill: colorOf(pool, s.identity)},
                     svg("title", {text: `${s.name}: ${pct(s.ownership, 2)}`})));
    start = end;
  }
  svgEl.append(svg("text", {x: 0, y: -4, "text-anchor": "middle", "font-size": 16,
                            fill: "currentColor", text: String(live.length)}),
               svg("text", {x: 0, y: 14, "text-anchor": "middle", "font-size": 11,
                            fill: "currentColor", text: live.length === 1 ? "server" : "servers"}));
}

function drawServers(tbody, pool, servers, dt) {
  tbody.replaceChildren();
  for (const s of servers) {
    const c = s.counters;
    const key = pool + "/" + s.identity;
    const rate = state.rates[key];
    const lookups = c.get_hits + c.get_misses;
    const hit = rate && rate.lookups > 0 ? rate.hits / rate.lookups
              : lookups > 0 ? (c.get_hits + Math.min(c.warmup_hits, c.get_misses)) / lookups : null;
    const stateText = s.state === "up" ? "up" : s.state;
    tbody.append(el("tr", {class: "server state-" + s.state, "data-server": s.identity},
      el("td", {}, el("span", {class: "swatch", style: "background:" + colorOf(pool, s.identity)}),
         s.name),
      el("td", {class: "text", text: s.identity}),
      el("td", {class: s.state === "up" ? "good" : "bad", text: stateText}),
      el("td", {text: s.weight ? String(s.weight) : "–"}),
      el("td", {class: "share", text: pct(s.ownership, 2)}),
      el("td", {text: rate ? num(rate.req) : "–"}),
      el("td", {text: pct(hit)}),
      el("td", {class: c.errors > 0 ? "bad" : "", text: num(c.errors)}),
      el("td", {class: rate && rate.err > 0 ? "bad" : "", text: rate ? num(rate.err) : "–"}),
      el("td", {text: micros(s.latency_us.p50)}),
      el("td", {text: micros(s.latency_us.p99)}),
      el("td", {text: num(Math.round(s.distinct_keys))}),
      el("td", {text: num(s.items.curr_items)})));
  }
}

function updateRates(backends, now) {
  const prev = state.previous;
  state.rates = {};
  if (prev) {
    const dt = (now - prev.at) / 1000;
    const old = {};
    for (const p of prev.data.pools) for (const s of p.servers) old[p.name + "/" + s.identity] = s;
    for (const p of backends.pools) {
      for (const s of p.servers) {
        const o = old[p.name + "/" + s.identity];
        if (!o || dt <= 0) continue;
        const d = (f) => Math.max(0, s.counters[f] - o.counters[f]);
        const warmed = Math.min(d("warmup_hits"), d("get_misses"));
        state.rates[p.name + "/" + s.identity] = {
          req: d("requests") / dt, err: d("errors") / dt,
          lookups: d("get_hits") + d("get_misses"), hits: d("get_hits") + warmed,
        };
      }
    }
  }
  state.previous = {data: backends, at: now};
}

// The hit-ratio timeline: one point a second (seconds with no lookups leave a gap), a dashed line
// at each membership change, and after it the hit ratio predicted (baseline hit ratio less the
// moved share) beside the lowest one observed.
function drawTimeline(chart, note, series, nowSecond, events) {
  chart.replaceChildren();
  const W = 800, H = 160, top = 8, bottom = 18;
  const n = series ? series.lookups.length : 0;
  const span = Math.max(60, n);
  const first = series && n ? series.first_second : nowSecond - span;
  const x = (sec) => ((sec - first) / span) * W;
  const y = (ratio) => top + (1 - ratio) * (H - top - bottom);
  for (const r of [0, 0.5, 1]) {
    chart.append(svg("line", {x1: 0, x2: W, y1: y(r), y2: y(r), class: "axis"}),
                 svg("text", {x: 2, y: y(r) + (r === 1 ? 10 : -2), text: pct(r, 0)}));
  }
  chart.append(svg("text", {x: W - 2, y: H - 4, "text-anchor": "end",
                            text: `${duration(span)} to now`}));
  let d = "";
  let pen = false;
  for (let i = 0; i < n; i++) {
    const l = series.lookups[i];
    if (l === 0) { pen = false; continue; }
    const ratio = 1 - series.misses[i] / l;
    d += (pen ? " L " : " M ") + x(first + i).toFixed(1) + " " + y(ratio).toFixed(1);
    pen = true;
  }
  if (d) chart.append(svg("path", {d, class: "hit"}));
  let shown = 0;
  for (const e of events) {
    if (e.change_second < first) continue;
    shown++;
    const ex = x(e.change_second);
    chart.append(svg("line", {x1: ex, x2: ex, y1: top, y2: H - bottom, class: "event"}),
                 svg("text", {x: ex + 3, y: H - 4, text: `#${e.id} ${changeText(e)}`}));
    const m = e.measurement;
    if (m.baseline_valid) {
      const x2 = Math.min(W, ex + W / 8);
      const predictedHit = (1 - m.baseline_miss_ratio) * (1 - e.prediction.moved_fraction);
      chart.append(svg("line", {x1: ex, x2, y1: y(predictedHit), y2: y(predictedHit),
                                class: "predicted"},
                       svg("title", {text: "predicted hit ratio " + pct(predictedHit)})));
      const observedHit = 1 - m.peak_miss_ratio;
      chart.append(svg("line", {x1: ex, x2, y1: y(observedHit), y2: y(observedHit),
                                class: "observed"},
                       svg("title", {text: "lowest observed hit ratio " + pct(observedHit)})));
    }
  }
  note.textContent = n === 0
    ? "No lookups yet."
    : `Last ${duration(n)}; blue: hit ratio; orange: membership changes (${shown}); after each, ` +
      "grey dashes: predicted hit ratio, red: lowest observed.";
}

function changeText(e) {
  const parts = [];
  if (e.added.length) parts.push("+" + e.added.join(", +"));
  if (e.removed.length) parts.push("−" + e.removed.join(", −"));
  return (e.kind !== "reload" ? e.kind + " " : "") +
         (parts.length ? parts.join(" ") : `${e.servers_before} → ${e.servers_after} servers`);
}

function drawEvents(tbody, events) {
  tbody.replaceChildren();
  for (const e of events.slice().reverse()) {
    const m = e.measurement;
    const observed = m.baseline_valid
      ? `${pct(m.baseline_miss_ratio)} → ${pct(m.peak_miss_ratio)}`
      : "no baseline";
    const recovery = m.recovered ? duration(m.recovery_seconds)
                   : m.spike ? "not yet" : e.judged ? "no spike" : "measuring";
    tbody.append(el("tr", {class: "event", "data-event-id": String(e.id)},
      el("td", {text: String(e.id)}),
      el("td", {class: "text", text: when(e.time)}),
      el("td", {class: "text", text: changeText(e)}),
      el("td", {class: "predicted", text: pct(e.prediction.moved_fraction, 2)}),
      el("td", {class: "muted", text: pct(e.prediction.modula_moved_fraction, 2)}),
      el("td", {class: "observed " + (m.spike ? "warn" : ""), text: observed}),
      el("td", {text: num(Math.round(m.extra_misses))}),
      el("td", {text: recovery}),
      el("td", {class: "verdict", text: e.verdict || (e.judged ? "" : "measuring…")})));
  }
  if (!events.length) {
    tbody.append(el("tr", {}, el("td", {colSpan: 9, class: "muted text",
                                        text: "No membership change since start."})));
  }
}

function drawWarmup(box, pool, events, nowSecond, counters) {
  box.replaceChildren();
  const last = events.filter((e) => e.warmup_window_ms > 0).pop();
  if (!last) return;
  const elapsed = nowSecond - last.change_second;
  const windowSeconds = last.warmup_window_ms / 1000;
  if (elapsed >= windowSeconds) return;
  box.append(el("div", {class: "notice warn", "data-warmup": pool},
    `Warm-up window open after change #${last.id}: `,
    el("progress", {max: windowSeconds, value: elapsed}),
    ` ${duration(Math.max(0, elapsed))} of ${duration(windowSeconds)}; ` +
    `answered from previous servers ${num(counters.warmup_hits)}, ` +
    `not there either ${num(counters.warmup_misses)}, copied ${num(counters.warmup_copies)}, ` +
    `skipped ${num(counters.warmup_skips)} (totals since start, all pools)`));
}

// ---- what-if ------------------------------------------------------------------------------------

function serverLines(servers) {
  return servers.filter((s) => s.state === "up")
    .map((s) => s.identity + ":" + s.weight + (s.name !== s.identity ? " " + s.name : ""))
    .join("\n");
}

async function runWhatIf(pool) {
  const parts = state.pools[pool].parts;
  parts.whatifResult.replaceChildren(el("div", {class: "muted", text: "planning…"}));
  let body;
  let ok;
  try {
    const r = await fetch("/whatif/" + encodeURIComponent(pool), {
      method: "POST", body: parts.whatifText.value, headers: {"Content-Type": "text/plain"}});
    ok = r.ok;
    body = await r.json().catch(() => ({error: "HTTP " + r.status}));
  } catch (err) {
    ok = false;
    body = {error: String(err)};
  }
  parts.whatifResult.replaceChildren();
  if (!ok || body.error) {
    parts.whatifResult.append(el("div", {class: "bad whatif-error", text: body.error}));
    return;
  }
  const plan = body.plan;
  const modula = body.modula;
  parts.whatifResult.append(el("div", {class: "result-fig"},
    "Keys moved: ", el("b", {class: "whatif-moved", text: pct(plan.moved, 2)}),
    ` (${plan.distribution}, ${plan.method})`,
    modula && body.before.distribution !== "modula"
      ? el("span", {class: "muted", text: `; modula would move ${pct(modula.moved, 2)}`}) : null));
  // replicas > 1 on a side: the share of keys whose replica set changes (a server left or joined).
  const sets = plan.replica_sets;
  if (sets) {
    const label = sets.replicas_before === sets.replicas_after ? `replicas ${sets.replicas_after}`
      : `replicas ${sets.replicas_before} → ${sets.replicas_after}`;
    const ms = modula && body.before.distribution !== "modula" ? modula.replica_sets : null;
    parts.whatifResult.append(el("div", {class: "result-fig"},
      "Replica sets changed: ", el("b", {class: "whatif-sets-changed", text: pct(sets.changed, 2)}),
      ` (${label}, ${sets.method}; no copy kept ${pct(sets.none_kept, 2)})`,
      ms ? el("span", {class: "muted", text: `; modula would change ${pct(ms.changed, 2)}`})
        : null));
  }
  const own = el("tbody");
  for (const o of plan.ownership) {
    own.append(el("tr", {"data-whatif-server": o.server},
      el("td", {text: o.server}), el("td", {text: pct(o.before, 2)}),
      el("td", {text: pct(o.after, 2)}), el("td", {text: pct(o.moved_out, 2)}),
      el("td", {text: pct(o.moved_in, 2)})));
  }
  parts.whatifResult.append(el("table", {class: "whatif-ownership"},
    el("thead", {}, el("tr", {}, el("th", {text: "server"}), el("th", {text: "share before"}),
      el("th", {text: "after"}), el("th", {text: "loses"}), el("th", {text: "gains"}))), own));
  const moves = plan.matrix.filter((c) => c.moved).slice(0, 25);
  const mv = el("tbody");
  for (const c of moves) {
    mv.append(el("tr", {}, el("td", {text: c.from}), el("td", {class: "text", text: c.to}),
                    el("td", {text: pct(c.fraction, 2)})));
  }
  if (!moves.length) {
    mv.append(el("tr", {}, el("td", {colSpan: 3, class: "muted text",
                                     text: "No key changes server."})));
  }
  parts.whatifResult.append(el("table", {class: "whatif-moves"},
    el("thead", {}, el("tr", {}, el("th", {text: "loses keys"}),
      el("th", {class: "text", text: "to"}), el("th", {text: "share of all keys"}))), mv));
}

// ---- reloads, hot keys, routes, the header ------------------------------------------------------

function drawReloads(reloads) {
  const tbody = document.getElementById("reload-rows");
  tbody.replaceChildren();
  for (const r of reloads.slice().reverse()) {
    const cls = r.result === "failed" ? "bad" : r.result === "applied" ? "good" : "muted";
    tbody.append(el("tr", {class: "reload", "data-reload-id": String(r.id)},
      el("td", {text: String(r.id)}), el("td", {class: "text", text: when(r.time)}),
      el("td", {class: "text", text: r.source}), el("td", {class: cls, text: r.result}),
      el("td", {text: String(r.generation)}),
      el("td", {class: "wrap" + (r.error ? " bad" : ""), text: r.error || r.diff || ""})));
  }
  if (!reloads.length) {
    tbody.append(el("tr", {}, el("td", {colSpan: 6, class: "muted text",
                                        text: "No reload since start."})));
  }
}

function drawHotkeys(data) {
  const panel = document.getElementById("hotkeys");
  const body = document.getElementById("hotkeys-body");
  const pools = Object.entries((data && data.pools) || {}).filter(([, keys]) => keys.length);
  if (!pools.length) {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  body.replaceChildren();
  for (const [pool, keys] of pools) {
    const tb = el("tbody");
    for (const k of keys.slice(0, HOTKEYS_SHOWN)) {
      tb.append(el("tr", {}, el("td", {text: k.key}), el("td", {text: num(k.rate)}),
        el("td", {text: pct(k.share, 2)}), el("td", {text: "±" + num(k.error)}),
        el("td", {class: "text", text: (k.backends || []).join(", ")})));
    }
    body.append(el("h3", {text: pool}), el("table", {},
      el("thead", {}, el("tr", {}, el("th", {text: "key"}), el("th", {text: "req/s"}),
        el("th", {text: "share"}), el("th", {text: "error"}),
        el("th", {class: "text", text: "servers"}))), tb));
  }
}

// Routes (/routes): per listener, a row per route: its prefix, pool, requests per second (from
// the previous answer), errors and rate-limited requests (totals), and its shadow pool with the
// copies sent and dropped and how often its answers agreed with the pool's: over the last poll
// when reads were compared in it (how warm the shadow pool is now), else since start. Hidden
// when no pool has routes.
function drawRoutes(data, now) {
  const panel = document.getElementById("routes");
  const body = document.getElementById("routes-body");
  const listeners = ((data && data.listeners) || []).filter((l) => l.routes.length);
  const prev = state.routesPrevious;
  const requests = {};
  const compared = {};
  const agreed = {};
  for (const l of listeners) {
    for (const r of l.routes) {
      const key = l.name + "\n" + r.route;
      requests[key] = r.counters.requests;
      compared[key] = r.counters.shadow_compared;
      agreed[key] = r.counters.shadow_agreed;
    }
  }
  state.routesPrevious = {at: now, requests, compared, agreed};
  if (!listeners.length) {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  body.replaceChildren();
  const dt = prev ? (now - prev.at) / 1000 : 0;
  for (const l of listeners) {
    const tb = el("tbody");
    for (const r of l.routes) {
      const c = r.counters;
      const before = prev ? prev.requests[l.name + "\n" + r.route] : undefined;
      const rate = before !== undefined && dt > 0 ? Math.max(0, c.requests - before) / dt : null;
      const key = l.name + "\n" + r.route;
      const newlyCompared = prev && prev.compared[key] !== undefined
        ? c.shadow_compared - prev.compared[key] : 0;
      const agreement = newlyCompared > 0
        ? (c.shadow_agreed - prev.agreed[key]) / newlyCompared : r.shadow_agreement;
      const sh = r.shadow;
      const shadowText = sh ? sh.pool + (sh.percent < 100 ? ` (${sh.percent}% of keys)` : "") +
                              (sh.writes_only ? " writes only" : "") : "–";
      tb.append(el("tr", {class: "route", "data-listener": l.name, "data-route": r.route},
        el("td", {class: r.default ? "muted" : "", text: r.default ? "(default)" : r.prefix}),
        el("td", {class: "text", text: r.pool}),
        el("td", {text: rate === null ? "–" : num(rate)}),
        el("td", {class: c.errors > 0 ? "bad" : "", text: num(c.errors)}),
        el("td", {class: c.rate_limited > 0 ? "warn" : "", text: num(c.rate_limited)}),
        el("td", {class: "text", text: shadowText}),
        el("td", {text: sh ? num(c.shadow_sent) : "–"}),
        el("td", {class: c.shadow_dropped > 0 ? "warn" : "",
                  text: sh ? num(c.shadow_dropped) : "–"}),
        el("td", {class: "agreement", text: pct(agreement)})));
    }
    body.append(el("h3", {text: l.name}), el("table", {},
      el("thead", {}, el("tr", {},
        el("th", {text: "prefix"}), el("th", {class: "text", text: "pool"}),
        el("th", {text: "req/s"}), el("th", {text: "errors"}), el("th", {text: "rate-limited"}),
        el("th", {class: "text", text: "shadow pool"}), el("th", {text: "shadow sent"}),
        el("th", {text: "dropped"}), el("th", {text: "agreement"}))), tb));
  }
}

// Slow requests (/slow, slow_request_ms): hidden while no pool has it; the last ones, newest
// first, with each pool's count. Keys are as the pool's log_keys shows them.
function drawSlow(data) {
  const panel = document.getElementById("slow");
  const body = document.getElementById("slow-body");
  const pools = ((data && data.pools) || []).filter((p) => p.slow_request_ms > 0 || p.count > 0);
  if (!pools.length) {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  body.replaceChildren(el("p", {class: "muted text", text: pools.map((p) =>
    `${p.pool}: ${p.count} slower than ${p.slow_request_ms} ms`).join(" · ")}));
  const tb = el("tbody");
  for (const s of (data.requests || []).slice(0, SLOW_SHOWN)) {
    tb.append(el("tr", {}, el("td", {class: "text", text: new Date(s.time_ms).toLocaleTimeString()}),
      el("td", {class: "text", text: s.pool + (s.route ? " / " + s.route : "")}),
      el("td", {class: "text", text: s.cmd}), el("td", {class: "text", text: s.key}),
      el("td", {text: num(s.elapsed_us / 1000)}), el("td", {class: "text", text: s.status}),
      el("td", {class: "text", text: s.backend}), el("td", {class: "text", text: s.client})));
  }
  if (!tb.children.length) {
    tb.append(el("tr", {}, el("td", {colSpan: 8, class: "muted text", text: "None yet."})));
  }
  body.append(el("table", {}, el("thead", {}, el("tr", {},
    ...["time", "pool", "cmd", "key", "ms", "status", "server", "client"].map((t) =>
      el("th", {class: t === "ms" ? "" : "text", text: t})))), tb));
}

// Top prefixes (/prefixes, `stats detail`): per pool whose detail counted anything, its busiest
// prefixes over the endpoint's last interval, with their totals. Hidden when none.
function drawPrefixes(data) {
  const panel = document.getElementById("prefixes");
  const body = document.getElementById("prefixes-body");
  const pools = Object.entries((data && data.pools) || {}).filter(([, p]) => p.top.length);
  if (!pools.length) {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  body.replaceChildren();
  for (const [pool, p] of pools) {
    const tb = el("tbody");
    for (const r of p.top) {
      tb.append(el("tr", {class: "prefix"}, el("td", {class: "text", text: r.prefix}),
        el("td", {text: num(r.requests_per_s)}), el("td", {text: num(r.hits_per_s)}),
        el("td", {text: num(r.get)}), el("td", {text: num(r.hit)}), el("td", {text: num(r.set)}),
        el("td", {text: num(r.del)})));
    }
    const note = (p.enabled ? "on" : "off") + ` · ${p.prefixes} prefixes`;
    body.append(el("h3", {text: pool + " "}, el("span", {class: "muted", text: note})),
      el("table", {}, el("thead", {}, el("tr", {}, el("th", {class: "text", text: "prefix"}),
        el("th", {text: "req/s"}), el("th", {text: "hits/s"}), el("th", {text: "get"}),
        el("th", {text: "hit"}), el("th", {text: "set"}), el("th", {text: "del"}))), tb));
  }
}

// Top clients (/clients): the busiest client addresses by request rate, with byte rates.
function drawClients(data) {
  const panel = document.getElementById("clients");
  const body = document.getElementById("clients-body");
  const rows = ((data && data.clients) || []).filter((c) => c.requests > 0);
  if (!rows.length) {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  const tb = el("tbody");
  for (const c of rows) {
    tb.append(el("tr", {class: "client"}, el("td", {class: "text", text: c.address}),
      el("td", {text: num(c.requests_per_s)}), el("td", {text: num(c.bytes_in_per_s)}),
      el("td", {text: num(c.bytes_out_per_s)}), el("td", {text: num(c.requests)})));
  }
  body.replaceChildren(el("table", {}, el("thead", {}, el("tr", {},
    el("th", {class: "text", text: "client"}), el("th", {text: "req/s"}),
    el("th", {text: "bytes in/s"}), el("th", {text: "bytes out/s"}),
    el("th", {text: "requests"}))), tb));
}

async function fetchHotkeys() {
  if (state.hotkeysWait > 0) {
    state.hotkeysWait--;
    return null;
  }
  try {
    const r = await fetch("/hotkeys", {cache: "no-store"});
    if (r.ok) return await r.json();
  } catch (err) {
    // not there: hidden
  }
  state.hotkeysWait = HOTKEYS_RETRY_POLLS;
  return null;
}

function drawSummary(stats, backends) {
  const ejected = [];
  for (const p of backends.pools) {
    for (const s of p.servers) if (s.state === "ejected") ejected.push(`${s.name} (${p.name})`);
  }
  document.getElementById("summary").textContent =
    `${stats.version} · up ${duration(stats.uptime)} · config generation ` +
    `${stats.config_generation} · reloads ${stats.reloads}` +
    (stats.reload_failures ? ` (${stats.reload_failures} failed)` : "") +
    ` · clients ${stats.counters.curr_connections}`;
  const notices = document.getElementById("notices");
  notices.replaceChildren();
  if (ejected.length) {
    notices.append(el("div", {class: "notice bad", id: "ejected"},
                      "Ejected (out of the ring until a probe succeeds): " + ejected.join(", ")));
  }
  if (stats.reload_last_error) {
    notices.append(el("div", {class: "notice bad"}, "Last reload failed: ",
                      el("code", {text: stats.reload_last_error})));
  }
}

// ---- the poll loop ------------------------------------------------------------------------------

async function poll() {
  try {
    const [stats, backends, timeline, events, reloads, hotkeys, routes, slow, prefixes, clients] =
      await Promise.all([
        getJson("/stats"), getJson("/backends"), getJson("/timeline"), getJson("/events"),
        getJson("/reloads"), fetchHotkeys(), getJson("/routes"), getJson("/slow"),
        getJson("/prefixes"), getJson("/clients")]);
    const now = Date.now();
    updateRates(backends, now);
    drawSummary(stats, backends);
    const seen = new Set();
    for (const p of backends.pools) {
      seen.add(p.name);
      const {parts} = poolSection(p.name);
      parts.title.textContent = p.name + " ";
      // The ring's identity, shortened: proxies showing the same one place keys alike.
      const ring = p.topology_hash ? ` · ring ${p.topology_hash.slice(0, 8)}` : "";
      parts.title.append(el("span", {class: "muted",
        title: p.topology_hash ? `topology hash ${p.topology_hash}` : "",
        text: `${p.distribution || ""} · hash ${p.hash || ""}${ring} · ` +
              `${p.servers.filter((s) => s.state === "up").length} servers`}));
      drawRing(parts.ring, p.name, p.servers);
      drawServers(parts.servers, p.name, p.servers);
      const poolEvents = events.filter((e) => e.pool === p.name);
      const series = timeline.pools.find((t) => t.name === p.name);
      drawTimeline(parts.chart, parts.chartNote, series, timeline.now_second, poolEvents);
      drawEvents(parts.events, poolEvents);
      drawWarmup(parts.warmup, p.name, poolEvents, timeline.now_second, stats.counters);
      const lines = serverLines(p.servers);
      if (state.whatifFilled[p.name] === undefined ||
          parts.whatifText.value === state.whatifFilled[p.name]) {
        parts.whatifText.value = lines;  // follows the ring until edited
      }
      state.whatifFilled[p.name] = lines;
    }
    for (const name of Object.keys(state.pools)) {
      if (!seen.has(name)) {
        state.pools[name].section.remove();
        delete state.pools[name];
      }
    }
    drawReloads(reloads);
    drawHotkeys(hotkeys);
    drawRoutes(routes, now);
    drawSlow(slow);
    drawPrefixes(prefixes);
    drawClients(clients);
    document.body.dataset.loaded = "1";
    setStatus("updated " + new Date(now).toLocaleTimeString());
  } catch (err) {
    setStatus("cannot reach mcring: " + err.message, "bad");
  }
}

async function reload() {
  const headers = {};
  if (token()) headers.Authorization = "Bearer " + token();
  setStatus("reloading…");
  try {
    const r = await fetch("/reload", {method: "POST", headers});
    if (r.status === 401) setStatus("reload refused: the admin token is needed", "bad");
    else if (r.status === 422) setStatus("reload failed: see the history", "bad");
    else if (!r.ok) setStatus("reload refused: HTTP " + r.status, "bad");
    else setStatus("reloaded", "good");
  } catch (err) {
    setStatus("reload: " + err.message, "bad");
  }
  poll();
}

function start() {
  const t = document.getElementById("token");
  t.value = sessionStorage.getItem("mcring-token") || "";
  t.addEventListener("change", () => sessionStorage.setItem("mcring-token", t.value));
  document.getElementById("reload").addEventListener("click", reload);
  document.getElementById("interval").textContent = String(POLL_MS / 1000);
  poll();
  setInterval(() => {
    if (!document.hidden) poll();  // a background tab does not poll
  }, POLL_MS);
}

start();
