// fsd ui: the runs list and the run page, drawn from JSON with plain DOM
// and inline SVG. In a report the run's data is inline (window.FSD_DATA)
// and nothing is fetched.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const COLORS = { completed: "#2e9e5b", finished: "#2e9e5b", running: "#2f6fde", waiting: "#c26a00", failed: "#d13d3d",
  pending: "#98a2b3", cancelled: "#b08a2e", interrupted: "#d13d3d" };

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const k of kids.flat()) {
    if (k == null) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids.flat()) {
    if (k == null) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

const badge = (s) => el("span", { class: "status " + s }, s);
const ms = (a, b) => new Date(b) - new Date(a);
const isSet = (t) => t && !String(t).startsWith("0001-");

function dur(msec) {
  if (!(msec >= 0)) return "–";
  if (msec < 1000) return msec + " ms";
  if (msec < 60000) return (msec / 1000).toFixed(1) + " s";
  return Math.floor(msec / 60000) + " m " + Math.round((msec % 60000) / 1000) + " s";
}

// tokens says a usage's four figures as every view of fsd does (run.json,
// fsd runs, the live board): in (cached read, cache written), out, and
// whether fsd estimated them. u uses the request-event field names.
function tokens(u, cost) {
  const n = (x) => (x || 0).toLocaleString();
  let t = `${n(u.input_tokens)} in`;
  if (u.cached_input_tokens || u.cache_write_tokens) t += ` (${n(u.cached_input_tokens)} cached, ${n(u.cache_write_tokens)} written)`;
  t += `, ${n(u.output_tokens)} out`;
  if (u.estimated) t += " (estimated)";
  if (cost) t += ` · cost ${cost < 1 ? cost.toFixed(4) : cost.toFixed(2)}`;
  return t;
}

// runUsage is a run.json summary's figures as a usage.
function runUsage(s) {
  return { input_tokens: s.input_tokens, cached_input_tokens: s.cached_input_tokens, cache_write_tokens: s.cache_write_tokens,
    output_tokens: s.output_tokens, estimated: s.tokens_estimated };
}

// ---- runs list ----

async function runsPage(main) {
  const runs = await (await fetch("/api/runs")).json();
  main.replaceChildren(el("h1", {}, "Runs"));
  if (runs.length === 0) {
    main.append(el("p", { class: "empty" }, "No runs yet. Run a workflow with fsd run, then reload."));
    return;
  }
  const rows = runs.map((r) => el("tr", { "data-run": r.id },
    el("td", {}, el("a", { href: "/run/" + encodeURIComponent(r.id) }, r.id)),
    el("td", {}, badge(r.status)),
    el("td", {}, new Date(r.started).toLocaleString()),
    el("td", {}, isSet(r.finished) ? dur(ms(r.started, r.finished)) : "–"),
    el("td", {}, tokens(runUsage(r), r.cost)),
    el("td", { class: "meta" }, r.workflow)));
  main.append(el("table", { id: "runs" },
    el("tr", {}, ["Run", "Status", "Started", "Duration", "Tokens", "Workflow"].map((h) => el("th", {}, h))),
    rows));
}

// ---- run page ----

function boardGraph(tasks) {
  if (tasks.length === 0) return el("p", { class: "empty" }, "No board: this run has no tasks.");
  const depth = {};
  const byId = Object.fromEntries(tasks.map((t) => [t.id, t]));
  const d = (id, seen) => {
    if (depth[id] !== undefined) return depth[id];
    if (seen.has(id)) return 0;
    seen.add(id);
    const t = byId[id];
    depth[id] = t && t.deps ? Math.max(0, ...t.deps.filter((x) => byId[x]).map((x) => d(x, seen) + 1)) : 0;
    return depth[id];
  };
  tasks.forEach((t) => d(t.id, new Set()));
  const cols = [];
  tasks.forEach((t) => (cols[depth[t.id]] = cols[depth[t.id]] || []).push(t));
  const W = 170, H = 46, GX = 60, GY = 14;
  const pos = {};
  cols.forEach((col, i) => col.forEach((t, j) => (pos[t.id] = { x: 10 + i * (W + GX), y: 10 + j * (H + GY) })));
  const width = 20 + cols.length * (W + GX) - GX, height = 20 + Math.max(...cols.map((c) => c.length)) * (H + GY) - GY;
  const g = svg("svg", { id: "board", width, height, viewBox: `0 0 ${width} ${height}` },
    svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" },
      svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#98a2b3" }))));
  tasks.forEach((t) => (t.deps || []).filter((x) => pos[x]).forEach((x) => {
    const a = pos[x], b = pos[t.id];
    g.append(svg("path", { d: `M${a.x + W},${a.y + H / 2} C${a.x + W + GX / 2},${a.y + H / 2} ${b.x - GX / 2},${b.y + H / 2} ${b.x},${b.y + H / 2}`,
      fill: "none", stroke: "#98a2b3", "marker-end": "url(#arrow)" }));
  }));
  tasks.forEach((t) => {
    const p = pos[t.id], c = COLORS[t.status] || "#98a2b3";
    g.append(svg("g", { class: "node", "data-task": t.id, "data-status": t.status },
      svg("title", {}, `${t.id} (${t.agent}): ${t.status}${t.worker ? " on worker " + t.worker : ""}\n${t.goal || ""}${t.progress ? "\n" + t.progress : ""}`),
      svg("rect", { x: p.x, y: p.y, width: W, height: H, fill: c + "22", stroke: c }),
      svg("text", { x: p.x + 10, y: p.y + 19 }, t.id),
      svg("text", { x: p.x + 10, y: p.y + 36, class: "muted" }, t.progress ? `↳ ${t.progress.replace(/^mcp__[^_]+__/, "")}`.slice(0, 26)
        : `${t.status} · ${(t.agent || "").split("/").pop().slice(0, 18)}`)));
  });
  return g;
}

function timeline(v) {
  const rows = v.gens.map((gen) => {
    const t = v.tasks.find((x) => x.id === gen.task);
    return { label: gen.task ? gen.task : "host", task: t, calls: gen.calls || [] };
  });
  // Rows in the order things started: the host first, then tasks.
  const first = (r) => (r.task && isSet(r.task.started) ? new Date(r.task.started)
    : r.calls.length && isSet(r.calls[0].start) ? new Date(r.calls[0].start) : Infinity);
  rows.sort((a, b) => (a.label === "host") - (b.label === "host") ? (b.label === "host") - (a.label === "host") : first(a) - first(b));
  const times = [];
  rows.forEach((r) => {
    if (r.task && isSet(r.task.started)) times.push(new Date(r.task.started));
    // A task ends after its last call: its bar must fit too.
    if (r.task && isSet(r.task.finished)) times.push(new Date(r.task.finished));
    r.calls.forEach((c) => { if (isSet(c.start)) times.push(new Date(c.start)); if (isSet(c.end)) times.push(new Date(c.end)); });
  });
  if (times.length === 0) return el("p", { class: "empty" }, "Nothing ran yet.");
  const t0 = Math.min(...times), now = new Date(v.now);
  const t1 = Math.max(...times, v.live ? now : 0);
  const span = Math.max(t1 - t0, 1), L = 110, W = 900, RH = 24;
  const x = (t) => L + ((new Date(t) - t0) / span) * (W - L - 10);
  const g = svg("svg", { id: "timeline", width: W, height: rows.length * RH + 30, viewBox: `0 0 ${W} ${rows.length * RH + 30}` });
  rows.forEach((r, i) => {
    const y = 8 + i * RH;
    g.append(svg("text", { x: 4, y: y + 13 }, r.label.slice(0, 16)));
    if (r.task && isSet(r.task.started)) {
      const end = isSet(r.task.finished) ? r.task.finished : now;
      g.append(svg("rect", { x: x(r.task.started), y: y, width: Math.max(x(end) - x(r.task.started), 2), height: RH - 6,
        fill: (COLORS[r.task.status] || "#98a2b3") + "33", stroke: COLORS[r.task.status] || "#98a2b3" },
        svg("title", {}, `${r.label}: ${r.task.status}, ${dur(ms(r.task.started, end))}`)));
      // The bar says what it is without a hover: status and duration,
      // after its end, or before its start when it ends near the edge.
      const label = `${r.task.status} · ${dur(ms(r.task.started, end))}`;
      const after = x(end) + 4 + label.length * 6 < W;
      g.append(svg("text", { x: after ? x(end) + 4 : Math.max(x(r.task.started) - 4, L), y: y + 13, class: "bar-label",
        "text-anchor": after ? "start" : "end" }, label));
    }
    r.calls.forEach((c) => {
      if (!isSet(c.start)) return;
      const end = isSet(c.end) ? c.end : now;
      g.append(svg("rect", { x: x(c.start), y: y + (c.kind === "model" ? 3 : 9), width: Math.max(x(end) - x(c.start), 2),
        height: c.kind === "model" ? 5 : 5, fill: c.error ? "#d13d3d" : c.kind === "model" ? "#2f6fde" : "#b08a2e", class: "call " + c.kind },
        svg("title", {}, `${c.kind === "model" ? "model call" : "tool " + c.name}: ${dur(ms(c.start, end))}`)));
    });
  });
  g.append(svg("text", { x: L, y: rows.length * RH + 24, class: "muted" }, "0"));
  g.append(svg("text", { x: W - 60, y: rows.length * RH + 24, class: "muted" }, dur(span)));
  return el("div", {}, g, el("div", { class: "legend" },
    el("span", {}, el("i", { style: "background:#2f6fde" }), "model call"),
    el("span", {}, el("i", { style: "background:#b08a2e" }), "tool call"),
    el("span", {}, el("i", { style: "background:#2e9e5b33;border:1px solid #2e9e5b" }), "task")));
}

function tokenChart(v) {
  const rows = v.gens.map((g) => ({ label: g.task || "host", in: g.In, out: g.Out }));
  const max = Math.max(1, ...rows.map((r) => r.in + r.out));
  const L = 110, W = 700, RH = 22;
  const g = svg("svg", { id: "tokens", width: W, height: rows.length * RH + 10, viewBox: `0 0 ${W} ${rows.length * RH + 10}` });
  rows.forEach((r, i) => {
    const y = 4 + i * RH, wi = ((W - L - 120) * r.in) / max, wo = ((W - L - 120) * r.out) / max;
    g.append(svg("text", { x: 4, y: y + 13 }, r.label.slice(0, 16)),
      svg("rect", { x: L, y, width: Math.max(wi, 1), height: RH - 6, fill: "#2f6fde" }),
      svg("rect", { x: L + wi, y, width: Math.max(wo, r.out ? 1 : 0), height: RH - 6, fill: "#2e9e5b" }),
      svg("text", { x: L + wi + wo + 6, y: y + 13, class: "muted" }, `${r.in.toLocaleString()} in · ${r.out.toLocaleString()} out`));
  });
  return el("div", {}, g, el("div", { class: "legend" },
    el("span", {}, el("i", { style: "background:#2f6fde" }), "input tokens"),
    el("span", {}, el("i", { style: "background:#2e9e5b" }), "output tokens")));
}

function message(m) {
  const head = m.role === "tool" ? `tool ${m.name} [${m.call_id}]${m.error ? " error" : ""}` : m.role;
  return el("div", { class: "msg" }, el("div", { class: "role" + (m.error ? " error" : "") }, head),
    m.text ? el("pre", {}, m.text) : null,
    (m.calls || []).map((c) => el("pre", {}, `→ ${c.name} ${JSON.stringify(c.args ?? {})} [${c.id}]`)));
}

function step(s) {
  s.messages = s.messages || [];
  s.tools = s.tools || [];
  const tk = s.tokens ? ` · ${s.tokens.total.toLocaleString()} tokens sent` : "";
  const us = s.usage ? ` · tokens ${tokens(s.usage, s.cost)}` : "";
  return el("details", { class: "step", "data-step": s.step },
    el("summary", {}, `step ${s.step}${tk}${us}${s.error ? " · error" : ""}`),
    s.reconstructed
      // Ran on a remote worker: only its transcript is on record.
      ? el("details", { class: "request" },
        el("summary", {}, `ran on a worker: request not on record; the transcript before it, ${plural(s.messages.length, "message")}`),
        s.messages.map(message))
      : el("details", { class: "request" },
        el("summary", {}, `request as sent: context, ${plural(s.messages.length, "message")}, ${plural(s.tools.length, "tool")}`),
        el("div", { class: "role" }, "context"), el("pre", { class: "context" }, s.context),
        el("div", { class: "role" }, "messages"), s.messages.map(message),
        el("div", { class: "role" }, "tools"),
        s.tools.map((t) => el("details", {}, el("summary", {}, t.name), el("pre", {}, t.description + "\n" + JSON.stringify(t.parameters, null, 2))))),
    s.error ? el("div", { class: "error" }, s.error) : null,
    el("div", { class: "role" }, "response"), (s.response || []).map(message));
}

function transcripts(v, open) {
  const attempt = (g) => g.attempt > 1 ? " · attempt " + g.attempt : "";
  const worker = (g) => g.worker ? " · on worker " + g.worker : "";
  return v.gens.map((g) => el("details", { class: "gen", "data-gen": g.task || "host", ...(open.has(g.task || "host") ? { open: "" } : {}) },
    el("summary", {}, `${g.task ? "task " + g.task : "host"}${g.agent ? " · " + g.agent : ""}${attempt(g)}${worker(g)} · ${plural(g.steps ? g.steps.length : 0, "model call")}`),
    (g.steps || []).map(step)));
}

// pendingCalls lists the calls waiting for a person's approval, with how
// to answer each (fsd approve, from any shell; a stopped run takes the
// answer when resumed).
function pendingCalls(s, live) {
  const calls = s.pending || [];
  if (calls.length === 0) return null;
  return el("section", { id: "pending" },
    el("h2", {}, `Waiting for approval (${calls.length})`),
    calls.map((p) => el("div", { class: "pending", "data-call": p.call },
      el("div", { class: "role" }, `${p.tool} · ${p.task ? "task " + p.task : "host"} · call ${p.call}`,
        isSet(p.since) ? ` · waiting since ${new Date(p.since).toLocaleTimeString()}` : ""),
      el("pre", { class: "args" }, JSON.stringify(p.args ?? {}, null, 2)),
      chatting() && live ? answerButtons(s.id, p.call) :
      el("div", { class: "meta" }, `answer with: fsd approve ${s.id} ${p.call} [--edit JSON | --reject REASON]`
        + (live ? "" : `, then fsd resume ${s.id}`)))));
}

// chatting: the page is served by fsd serve, whose API takes messages and
// answers (fsd ui only reads).
const chatting = () => document.body.dataset.chat === "1";

// post sends JSON to fsd serve's API and says what went wrong, if anything.
async function post(path, body) {
  const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  if (r.ok) return "";
  try { return (await r.json()).error; } catch (e) { return r.status + " " + r.statusText; }
}

function answerButtons(id, call) {
  const status = el("span", { class: "meta" });
  const answer = (decision) => async () => {
    const body = { decision };
    if (decision === "reject") body.reason = prompt("Why? (the model reads it)") || "rejected";
    status.textContent = await post(`/sessions/${encodeURIComponent(id)}/approvals/${call}`, body);
  };
  const b = (label, decision) => { const e = el("button", { type: "button", class: decision }, label); e.onclick = answer(decision); return e; };
  return el("div", { class: "answer-call" }, b("Approve", "approve"), " ", b("Reject", "reject"), " ", status);
}

// pretty indents a text that is JSON (a typed answer or result), so it
// reads as a document; any other text is shown as it is.
function pretty(text) {
  const t = (text || "").trim();
  if (!(t.startsWith("{") || t.startsWith("["))) return text;
  try {
    return JSON.stringify(JSON.parse(t), null, 2);
  } catch (e) {
    return text;
  }
}

// pageFrom is the first task of the page the reader asked for (#from=N).
function pageFrom() {
  const m = /from=(\d+)/.exec(location.hash);
  return m ? Number(m[1]) : 0;
}

// onePage cuts a view that holds every task (a report's) to the page
// from pageFrom, as the server sends it: its tasks, the host's
// generators and those of its tasks.
function onePage(v) {
  const size = Number(document.body.dataset.page) || 200;
  if (v.tasks_total || v.tasks.length <= size) return v;
  const from = Math.min(pageFrom(), v.tasks.length - 1);
  const tasks = v.tasks.slice(from, from + size);
  const ids = new Set(tasks.map((t) => t.id));
  return { ...v, tasks, gens: v.gens.filter((g) => !g.task || ids.has(g.task)), tasks_total: v.tasks.length, from };
}

// pages says which tasks the page shows and links to the pages before
// and after, when the run has more than one page of them.
function pages(v) {
  const total = v.tasks_total || 0, from = v.from || 0, n = v.tasks.length;
  if (total <= n) return null;
  const size = Number(document.body.dataset.page) || 200;
  const link = (to, label) => el("a", { href: "#from=" + to }, label);
  return el("nav", { id: "pages", class: "meta" },
    `Tasks ${(from + 1).toLocaleString()}–${(from + n).toLocaleString()} of ${total.toLocaleString()} · `,
    from > 0 ? link(Math.max(from - size, 0), "← previous") : null,
    from > 0 && from + n < total ? " · " : null,
    from + n < total ? link(from + n, "next →") : null);
}

function renderRun(main, v) {
  v.gens = v.gens || [];
  v.tasks = v.tasks || [];
  v = onePage(v);
  const s = v.summary;
  // Keep what the reader opened across live updates.
  const open = new Set([...main.querySelectorAll("details.gen[open]")].map((d) => d.dataset.gen));
  const openSteps = new Set([...main.querySelectorAll("details.gen[open] details[open]")].map((d) => d.closest("details.gen").dataset.gen + "/" + (d.dataset.step || "") + "/" + d.className));
  const end = isSet(s.finished) ? s.finished : v.now;
  const live = document.getElementById("live");
  // The header keeps the run's running total in sight while it runs.
  if (live) live.textContent = v.live ? `● live · tokens ${tokens(runUsage(s), s.cost)}` : "";
  main.replaceChildren(...[
    el("h1", {}, "Run ", s.id, " ", badge(s.status)),
    el("div", { class: "meta" }, `${s.workflow} · started ${new Date(s.started).toLocaleString()} · ${dur(ms(s.started, end))} · tokens ${tokens(runUsage(s), s.cost)}`),
    s.input ? el("p", {}, el("b", {}, "Input: "), s.input) : null,
    s.answer ? el("div", {}, el("b", {}, "Answer"), el("div", { class: "answer", id: "answer" }, pretty(s.answer))) : null,
    s.error ? el("div", { class: "error" }, s.error) : null,
    pendingCalls(s, v.live),
    el("h2", {}, "Board"), pages(v), boardGraph(v.tasks || []),
    el("h2", {}, "Timeline"), timeline(v),
    el("h2", {}, "Tokens per task"), tokenChart(v),
    el("h2", {}, "Transcripts"), ...transcripts(v, open)].filter((x) => x != null));
  main.querySelectorAll("details.gen").forEach((gd) => gd.querySelectorAll("details").forEach((d) => {
    if (openSteps.has(gd.dataset.gen + "/" + (d.dataset.step || "") + "/" + d.className)) d.open = true;
  }));
}

async function runPage(main, id) {
  // The stream says "update" once at the start and "done" at the end even
  // when nothing changed: render only a view that differs, so a reader's
  // click never lands on a node a needless redraw just replaced.
  let last = "";
  const load = async () => {
    const from = pageFrom();
    const text = await (await fetch("/api/runs/" + encodeURIComponent(id) + (from ? "?from=" + from : ""))).text();
    const key = text.replace(/"now":"[^"]*"/, ""); // the server's clock alone is no change
    if (key === last) return;
    last = key;
    renderRun(main, JSON.parse(text));
  };
  await load();
  window.addEventListener("hashchange", () => load());
  const live = document.getElementById("live");
  const follow = () => {
    const es = new EventSource("/api/runs/" + encodeURIComponent(id) + "/live");
    es.addEventListener("update", () => load());
    es.addEventListener("done", () => { live.textContent = ""; es.close(); load(); });
  };
  follow();
  const chat = document.getElementById("chat");
  if (!chat) return;
  chat.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const status = document.getElementById("chat-status");
    const text = chat.elements.message.value;
    status.textContent = "sending…";
    const err = await post(`/sessions/${encodeURIComponent(id)}/messages`, { message: text });
    status.textContent = err;
    if (!err) { chat.elements.message.value = ""; follow(); }
  });
}

(async function () {
  const main = document.getElementById("main");
  const kind = document.body.dataset.kind;
  try {
    if (window.FSD_DATA) {
      renderRun(main, window.FSD_DATA);
      window.addEventListener("hashchange", () => renderRun(main, window.FSD_DATA));
    }
    else if (kind === "run") await runPage(main, document.body.dataset.run);
    else await runsPage(main);
    document.body.dataset.ready = "1";
  } catch (e) {
    main.replaceChildren(el("p", { class: "error" }, "Could not load: " + e));
  }
})();

// plural says "1 model call" and "2 model calls".
function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}
