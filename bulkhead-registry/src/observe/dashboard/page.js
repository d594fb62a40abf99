"use strict";
// The dashboard's script: reads the stream `events` beside this page and
// draws each sample. No framework, nothing loaded from elsewhere.

const HISTORY = 300; // samples kept per instance, across reconnects
const base = location.pathname.replace(/\/$/, "");
const history = new Map(); // "kind/instance" -> [{t, limit, flight, refused}]
let source = null;
let connections = 0;
let interval = 1000;
let heard = Date.now(); // the last sample, or the last stream opened here

const $ = (id) => document.getElementById(id);

function setStatus(state) {
  const status = $("status");
  status.dataset.state = state;
  status.textContent = state;
}

function setValue(el, value, text) {
  el.dataset.value = value === null || value === undefined ? "" : String(value);
  el.textContent = text !== undefined ? text : el.dataset.value === "" ? "–" : String(value);
}

function fmtRate(value) {
  if (value === null || value === undefined) return "–";
  return value < 10 ? value.toFixed(1) : Math.round(value).toString();
}

function fmtMillis(ms) {
  return ms < 1000 ? Math.round(ms) + " ms" : +(ms / 1000).toFixed(1) + " s";
}

// A latency in milliseconds, with a precision fit for sub-millisecond
// calls.
function fmtLatency(ms) {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1) return Math.round(ms * 1000) + " µs";
  return ms < 10 ? ms.toFixed(1) + " ms" : fmtMillis(ms);
}

function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const child of children || []) node.append(child);
  return node;
}

// A card per instance, made on its first sample. Its value elements carry
// data-kind, data-instance and data-field; `fields` lists them.
function card(section, kind, instance, fields, extra) {
  const id = kind + "/" + instance;
  let node = document.querySelector(`.card[data-key="${CSS.escape(id)}"]`);
  if (node) return node;
  const stats = el("div", { class: "stats" });
  for (const [field, label] of fields) {
    const value = el("b", { "data-kind": kind, "data-instance": instance, "data-field": field }, ["–"]);
    stats.append(el("div", { class: "stat", "data-stat": field }, [value, el("span", {}, [label])]));
  }
  const title = el("h3", {}, [instance, el("small", { "data-kind": kind, "data-instance": instance, "data-field": "badge" })]);
  node = el("div", { class: "card", "data-key": id, "data-kind": kind, "data-instance": instance }, [title, stats]);
  if (extra) extra(node);
  $(section).append(node);
  return node;
}

function field(node, name) {
  return node.querySelector(`[data-field="${name}"]`);
}

function chart(node, kind, instance) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("viewBox", "0 0 300 70");
  svg.setAttribute("preserveAspectRatio", "none");
  svg.dataset.kind = kind;
  svg.dataset.instance = instance;
  svg.dataset.field = "history";
  svg.dataset.points = "0";
  for (const [tag, name] of [["polygon", "refused"], ["polyline", "limit"], ["polyline", "flight"]]) {
    const shape = document.createElementNS("http://www.w3.org/2000/svg", tag);
    shape.setAttribute("class", name);
    svg.append(shape);
  }
  const legend = el("div", { class: "legend" });
  legend.innerHTML = '<i style="background:var(--limit)"></i>limit <span data-field="scale"></span>' +
    '<i style="background:var(--flight)"></i>in flight' +
    '<i style="background:var(--refused)"></i>refused/s, peak <span data-field="peak">0</span>' +
    ' · last <span data-field="span">0</span> s';
  node.append(svg, legend);
}

function remember(key, point) {
  let points = history.get(key);
  if (!points) history.set(key, (points = []));
  points.push(point);
  if (points.length > HISTORY) points.shift();
  return points;
}

// The limit and the calls in flight on one scale (the highest limit seen,
// with room above it); the refusals per second as an area below, on a
// scale of their own.
function draw(node, points) {
  const svg = node.querySelector("svg.chart");
  svg.dataset.points = String(points.length);
  const t0 = points[0].t;
  const span = Math.max(points[points.length - 1].t - t0, 1);
  const top = Math.max(1, ...points.map((p) => Math.max(p.limit, p.flight)));
  const rates = points.filter((p) => p.refused !== null && p.refused !== undefined);
  const peak = Math.max(0, ...rates.map((p) => p.refused));
  const x = (p) => (((p.t - t0) / span) * 300).toFixed(1);
  const y = (v, max, height = 58) => (68 - (v / max) * height).toFixed(1);
  const line = (name, value) => {
    svg.querySelector("." + name).setAttribute(
      "points",
      points.map((p) => x(p) + "," + y(value(p), top)).join(" "),
    );
  };
  line("limit", (p) => p.limit);
  line("flight", (p) => p.flight);
  // A rate is null where no interval was measured (a stream's first
  // sample): that stretch of the area is left out.
  const area = rates.map((p) => x(p) + "," + y(p.refused, Math.max(peak, 1), 40));
  if (rates.length) area.push(x(rates[rates.length - 1]) + ",68", x(rates[0]) + ",68");
  svg.querySelector(".refused").setAttribute("points", area.join(" "));
  node.querySelector('[data-field="scale"]').textContent = "(max " + top + ")";
  node.querySelector('[data-field="peak"]').textContent = fmtRate(peak);
  node.querySelector('[data-field="span"]').textContent = Math.round(span / 1000);
}

function markGone(section, seen) {
  for (const node of $(section).children) {
    if (seen.has(node.dataset.instance)) node.removeAttribute("data-gone");
    else node.setAttribute("data-gone", "");
  }
}

function title(id, text, list) {
  $(id).textContent = list.length ? text : "";
}

function renderBulkheads(list, t) {
  title("bulkheads-title", "Bulkheads", list);
  for (const b of list) {
    const node = card("bulkheads", "bulkhead", b.instance, [
      ["in_flight", "in flight"], ["limit", "limit"], ["waiting", "waiting"], ["rejected_per_sec", "refused/s"],
    ], (node) => {
      node.querySelector(".stats").after(el("div", { class: "bar" }, [el("div")]));
      node.querySelector(".bar").after(el("div", { class: "latency" }, [
        "p50 ", el("b", { "data-kind": "bulkhead", "data-instance": b.instance, "data-field": "p50_ms" }, ["–"]),
        " · p99 ", el("b", { "data-kind": "bulkhead", "data-instance": b.instance, "data-field": "p99_ms" }, ["–"]),
        " · ", el("b", { "data-kind": "bulkhead", "data-instance": b.instance, "data-field": "calls_per_sec" }, ["–"]),
        " calls/s",
      ]));
      chart(node, "bulkhead", b.instance);
      node.append(el("table", { "data-field": "classes" }));
    });
    setValue(field(node, "in_flight"), b.in_flight);
    setValue(field(node, "limit"), b.limit);
    setValue(field(node, "waiting"), b.waiting);
    setValue(field(node, "rejected_per_sec"), b.rejected_per_sec, fmtRate(b.rejected_per_sec));
    node.querySelector('[data-stat="rejected_per_sec"]').classList.toggle("bad", b.rejected_per_sec > 0);
    // Calls through the instance's policies since the last sample (its
    // histograms): hidden until some were recorded.
    const lat = b.latency;
    node.querySelector(".latency").hidden = !lat;
    setValue(field(node, "p50_ms"), lat && lat.p50_ms, lat ? fmtLatency(lat.p50_ms) : undefined);
    setValue(field(node, "p99_ms"), lat && lat.p99_ms, lat ? fmtLatency(lat.p99_ms) : undefined);
    setValue(field(node, "calls_per_sec"), lat && lat.calls_per_sec, lat ? fmtRate(lat.calls_per_sec) : undefined);
    const badge = [];
    if (!b.enabled) badge.push("disabled");
    if (b.adaptive) badge.push(`${b.adaptive.algorithm} ${b.adaptive.floor}–${b.adaptive.ceiling}`);
    if (b.max_wait_ms > 0) badge.push("waits ≤ " + fmtMillis(b.max_wait_ms));
    setValue(field(node, "badge"), badge.join(" · "), badge.join(" · "));
    const bar = node.querySelector(".bar");
    bar.classList.toggle("full", b.in_flight >= b.limit);
    bar.firstChild.style.width = Math.min(100, (100 * b.in_flight) / Math.max(b.limit, 1)) + "%";
    draw(node, remember("bulkhead/" + b.instance, { t, limit: b.limit, flight: b.in_flight, refused: b.rejected_per_sec }));
    renderClasses(node.querySelector('table[data-field="classes"]'), b);
  }
  markGone("bulkheads", new Set(list.map((b) => b.instance)));
}

// Priority classes, shown once calls of two classes were held at once or
// a class was shed. The registry counts per class only the calls refused
// by their class's share (shed); a call refused because the bulkhead was
// full counts in the card's refused/s, not in a class: the caption says so.
function renderClasses(table, b) {
  const used = b.classes.filter((c) => c.held > 0).length > 1 || b.classes.some((c) => c.shed_total > 0);
  if (!used) { table.replaceChildren(); return; }
  const rows = [
    el("caption", {}, ["shed: refused by the class's share of the limit (shed_at); " +
      "calls refused by a full bulkhead count in refused/s only"]),
    el("tr", {}, ["class", "held", "threshold", "shed/s", "shed"].map((h) => el("th", {}, [h]))),
  ];
  for (const c of b.classes) {
    const cell = (name, value, text) => {
      const td = el("td", { "data-kind": "bulkhead", "data-instance": b.instance, "data-class": c.class, "data-field": name });
      setValue(td, value, text);
      return td;
    };
    rows.push(el("tr", {}, [
      el("td", {}, [c.class]), cell("held", c.held), cell("threshold", c.threshold),
      cell("shed_per_sec", c.shed_per_sec, fmtRate(c.shed_per_sec)), cell("shed_total", c.shed_total),
    ]));
  }
  table.replaceChildren(...rows);
}

function renderKeyed(list, t) {
  title("keyed-title", "Keyed bulkheads", list);
  for (const k of list) {
    const node = card("keyed", "keyed", k.instance, [
      ["in_flight", "in flight"], ["limit", "limit"], ["waiting", "waiting"], ["rejected_per_sec", "refused/s"],
      ["keys", "keys"], ["busy_keys", "busy keys"], ["per_key", "per key"], ["refused_keys", "keys refused"],
    ], (node) => {
      chart(node, "keyed", k.instance);
      node.append(el("table", { "data-field": "top" }));
    });
    for (const name of ["in_flight", "limit", "waiting", "keys", "busy_keys", "per_key", "refused_keys"]) {
      setValue(field(node, name), k[name]);
    }
    setValue(field(node, "rejected_per_sec"), k.rejected_per_sec, fmtRate(k.rejected_per_sec));
    draw(node, remember("keyed/" + k.instance, { t, limit: k.limit, flight: k.in_flight, refused: k.rejected_per_sec }));
    const rows = [el("tr", {}, ["busiest keys", "in flight", "waiting", "limit"].map((h) => el("th", {}, [h])))];
    for (const key of k.top) {
      rows.push(el("tr", { "data-key-name": key.key }, [
        el("td", {}, [key.key]), el("td", {}, [String(key.in_flight)]),
        el("td", {}, [String(key.waiting)]), el("td", {}, [String(key.limit)]),
      ]));
    }
    node.querySelector('table[data-field="top"]').replaceChildren(...(k.top.length ? rows : []));
  }
  markGone("keyed", new Set(list.map((k) => k.instance)));
}

function renderBreakers(list) {
  title("breakers-title", "Circuit breakers", list);
  for (const c of list) {
    const node = card("breakers", "circuit_breaker", c.instance, [
      ["failure_rate", "failure %"], ["buffered_calls", "calls in window"],
      ["not_permitted_total", "refused"], ["rejected_per_sec", "refused/s"],
    ]);
    const badge = field(node, "badge");
    badge.className = "state";
    setValue(badge, c.state, c.state.replace("_", " "));
    setValue(field(node, "failure_rate"), c.failure_rate, c.failure_rate === null ? "–" : c.failure_rate.toFixed(1));
    setValue(field(node, "buffered_calls"), c.buffered_calls);
    setValue(field(node, "not_permitted_total"), c.not_permitted_total);
    setValue(field(node, "rejected_per_sec"), c.rejected_per_sec, fmtRate(c.rejected_per_sec));
  }
  markGone("breakers", new Set(list.map((c) => c.instance)));
}

function renderLimiters(list) {
  title("limiters-title", "Rate limiters", list);
  for (const r of list) {
    const node = card("limiters", "rate_limiter", r.instance, [
      ["available_permits", "permits left"], ["limit_for_period", "per period"],
      ["waiting", "waiting"], ["rejected_per_sec", "refused/s"],
    ]);
    for (const name of ["available_permits", "limit_for_period", "waiting"]) setValue(field(node, name), r[name]);
    setValue(field(node, "rejected_per_sec"), r.rejected_per_sec, fmtRate(r.rejected_per_sec));
  }
  markGone("limiters", new Set(list.map((r) => r.instance)));
}

function renderFleets(list) {
  title("fleets-title", "Fleet shares", list);
  for (const f of list) {
    const node = card("fleets", "fleet", f.resource, [
      ["share", "share"], ["target", "target"], ["budget", "budget"], ["processes", "processes"],
    ]);
    const badge = field(node, "badge");
    badge.className = "state";
    setValue(badge, f.state);
    for (const name of ["share", "target", "budget", "processes"]) setValue(field(node, name), f[name]);
  }
  markGone("fleets", new Set(list.map((f) => f.resource)));
}

function render(sample) {
  interval = sample.interval_ms || interval;
  const lists = [sample.bulkheads, sample.keyed_bulkheads, sample.circuit_breakers, sample.rate_limiters, sample.fleets];
  $("empty").textContent = lists.some((list) => list.length) ? "" : "The registry has no policies yet.";
  setValue($("seq"), sample.seq);
  $("time").textContent = new Date(sample.time).toLocaleTimeString();
  setValue($("missed"), sample.events_missed);
  renderBulkheads(sample.bulkheads, sample.time);
  renderKeyed(sample.keyed_bulkheads, sample.time);
  renderBreakers(sample.circuit_breakers);
  renderLimiters(sample.rate_limiters);
  renderFleets(sample.fleets);
  setStatus("live");
}

// The browser's EventSource reopens a stream that ended or broke on its
// own (after the server's `retry`), but gives up for good after an error
// status or a wrong content type: then a new one is opened here. A stream
// that stays open but says nothing for SILENCE sample intervals (and a
// second after it opened or last spoke) is as good as broken: it is
// closed and a new one opened.
const SILENCE = 3;

function connect() {
  if (source) source.close();
  const mine = (source = new EventSource(base + "/events"));
  heard = Date.now();
  mine.addEventListener("open", () => {
    heard = Date.now();
    connections += 1;
    setValue($("connections"), connections);
  });
  mine.addEventListener("snapshot", (event) => {
    heard = Date.now();
    render(JSON.parse(event.data));
  });
  mine.addEventListener("error", () => {
    setStatus("reconnecting");
    if (mine.readyState === EventSource.CLOSED) {
      setTimeout(() => { if (source === mine) connect(); }, Math.max(interval, 1000));
    }
  });
}

// Only an open stream: one the browser is reopening (CONNECTING) waits
// for the server's `retry` first, however long that is, and is left to it.
setInterval(() => {
  if (source && source.readyState === EventSource.OPEN &&
      Date.now() - heard > SILENCE * interval + 1000) {
    setStatus("reconnecting");
    connect();
  }
}, 500);

connect();
