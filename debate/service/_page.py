"""The page to watch jobs (``GET /``): one self-contained HTML document.

No build step and nothing fetched from elsewhere: the report's CSS and a small script, both
inline and allowed by their SHA-256 hashes in the page's Content-Security-Policy, so an
injected ``<script>`` or ``style`` would not run. The page holds no data when served: the
script reads ``GET /v1/jobs`` with the visitor's bearer token and follows each unfinished
job's event stream, so it shows exactly what that token may see.

Each job is listed by its topic (or question), status, outcome and winner, from the
summaries of ``GET /v1/jobs``, filtered there by status and outcome; two forms submit a
debate (a topic, a seed) and a transcript (pasted, or read from a chosen file) with the
same token, and show the API's refusal, field named, beside the form.

The script reads Server-Sent Events through ``fetch`` and a streaming body reader rather
than ``EventSource``, because ``EventSource`` cannot send an ``Authorization`` header; the
token lives in ``sessionStorage`` (typed into the page, gone with the tab), never in a URL
where logs and the browser history would keep it. Every value from the server (job ids,
outcomes, error messages are the client's or a model's text) reaches the page through
``textContent``; the policy's ``require-trusted-types-for 'script'`` makes the browser
refuse an ``innerHTML`` of a string, so the rule is enforced, not only followed.
"""

from __future__ import annotations

import base64
import hashlib
from typing import TYPE_CHECKING

from debate.report._html import CSS as REPORT_CSS
from debate.service._summary import OUTCOMES, STATUSES

if TYPE_CHECKING:
    from fastapi import FastAPI

MAX_STREAMS = 4
"""Event streams the page follows at once. A browser opens about six HTTP/1.1 connections
per host; the rest stay free for the page's own requests. Jobs beyond it are refreshed
from the job list until a stream is free."""

PAGE_CSS = (
    REPORT_CSS
    + """
main { max-width:1180px; }
header.bar { display:flex; flex-wrap:wrap; align-items:baseline; gap:8px 24px;
  margin:0 0 14px; }
header.bar h1 { font-size:24px; margin:0; }
form.auth { display:flex; gap:8px; align-items:center; margin-left:auto; font-size:14px; }
form.auth input { font:inherit; padding:4px 8px; border:1px solid var(--line);
  border-radius:6px; width:16em; }
button { font:inherit; padding:4px 12px; border:1px solid #b8c0c8; border-radius:6px;
  background:#fff; cursor:pointer; }
button:hover { background:#f0f3f6; }
#notice { min-height:1.5em; margin:0 0 8px; color:var(--muted); font-size:13px; }
#notice.error { color:#b3261e; font-weight:600; }
.scroll table.jobs { width:100%; margin:0; }
table.jobs td { vertical-align:middle; }
table.jobs td.c-job { min-width:18em; }
table.jobs td.c-job code { display:block; font-size:12px; color:var(--muted);
  overflow-wrap:anywhere; }
.subject { display:block; font-weight:600; overflow-wrap:anywhere; }
.subject.none { font-weight:400; font-style:italic; color:var(--muted); }
section.new { display:grid; grid-template-columns:minmax(0,1fr) minmax(0,1fr); gap:10px 28px; }
section.new h2 { grid-column:1/-1; margin:0; font-size:17px; }
form.submit { display:flex; flex-direction:column; gap:8px; min-width:0; margin:0; }
form.submit h3 { margin:0; font-size:14px; }
.field { display:flex; flex-direction:column; gap:3px; font-size:13px; color:var(--muted); }
.line { display:flex; flex-wrap:wrap; gap:8px; align-items:flex-end; }
.line .field { flex:1 1 10em; }
input, textarea, select { font:inherit; font-size:14px; color:var(--ink); padding:4px 8px;
  border:1px solid #b8c0c8; border-radius:6px; background:#fff; min-width:0; }
input[type=file] { padding:2px; border:0; background:none; font-size:13px; flex:1 1 12em; }
textarea { min-height:4.6em; resize:vertical; font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,
  Consolas,monospace; }
[aria-invalid="true"] { border-color:#b3261e; outline:2px solid #f6c9c4; }
button:disabled { opacity:.6; cursor:progress; }
#submitted { grid-column:1/-1; margin:0; min-height:1.5em; font-size:13px;
  overflow-wrap:anywhere; }
#submitted:empty { display:none; }
#submitted.error { color:#b3261e; font-weight:600; }
#submitted.ok { color:#1e5317; }
.listbar { display:flex; flex-wrap:wrap; align-items:center; gap:6px 16px; margin:0 0 8px; }
.listbar #notice { margin:0; }
.filters { display:flex; flex-wrap:wrap; gap:6px 14px; font-size:14px; }
.filters label { display:flex; gap:6px; align-items:center; }
@media (max-width:700px) {
  section.new { grid-template-columns:1fr; }
  form.auth { margin-left:0; width:100%; }
  form.auth input { flex:1 1 8em; width:auto; }
  table.jobs thead { display:none; }
  table.jobs, table.jobs tbody { display:block; }
  table.jobs tr { display:flex; flex-wrap:wrap; align-items:center; gap:4px 10px;
    padding:8px 2px; border-bottom:1px solid var(--line); }
  table.jobs td { border:0; padding:0; }
  table.jobs td { order:2; }
  table.jobs td.c-job { order:0; flex:1 1 0; min-width:0; }
  table.jobs td.c-report { order:1; align-self:flex-start; }
  table.jobs tr::after { content:""; order:1; flex-basis:100%; }
  table.jobs tr.empty td { flex:1 0 100%; }
  table.jobs td.c-age { margin-left:auto; }
  table.jobs td.c-outcome:empty, table.jobs td.c-report:empty,
  table.jobs td.c-progress:empty { display:none; }
}
table.jobs td.c-age, table.jobs td.c-progress { white-space:nowrap; color:var(--muted);
  font-variant-numeric:tabular-nums; }
table.jobs td.c-outcome { max-width:28em; overflow-wrap:anywhere; }
table.jobs tr.empty td { color:var(--muted); text-align:center; padding:24px; }
.badge { display:inline-block; padding:1px 8px; border-radius:10px; font-size:12px;
  font-weight:600; line-height:1.5; white-space:nowrap; border:1px solid transparent; }
.status-queued { background:#e4e6e8; color:#3b4148; }
.status-running { background:#dbe9f8; color:#1c4f8a; }
.status-done { background:#cde8c5; color:#1e5317; }
.status-failed { background:#f6c9c4; color:#7f1d14; }
.status-cancelled, .status-other { background:#eceef0; color:#555; }
.status-running::before { content:""; display:inline-block; width:7px; height:7px;
  margin-right:5px; border-radius:50%; background:#1c4f8a; vertical-align:1px;
  animation:pulse 1.2s ease-in-out infinite; }
@keyframes pulse { 50% { opacity:.25; } }
.badge.outcome-winner, .badge.outcome-too_close, .badge.outcome-tied,
.badge.outcome-irreconcilable, .badge.outcome-insufficient, .badge.outcome-other
  { border-width:1px; border-style:solid; }
.badge.outcome-other { border-color:#8a96a3; background:#f1f2f4; }
.badge.outcome-winner { color:#1e5317; }
.badge.outcome-too_close, .badge.outcome-tied { color:#7a4a00; }
.badge.outcome-irreconcilable { color:#7f1d14; }
.side { margin-left:2px; font-weight:600; }
.fault { color:#7f1d14; font-size:13px; }
.fault b { font-weight:700; }
"""
)

PAGE_SCRIPT = r"""
"use strict";
const TOKEN_KEY = "debate-service-token";
const FINAL = new Set(["done", "failed", "cancelled"]);
const STATUSES = new Set(["queued", "running", "done", "failed", "cancelled"]);
const OUTCOMES = new Set([
  "winner", "too_close", "tied", "irreconcilable", "insufficient", "escalate",
]);
const COLUMNS = ["job", "kind", "status", "progress", "outcome", "age", "report"];
const MAX_STREAMS = __MAX_STREAMS__;
const RETRY_MS = 2000;
const jobs = new Map();
let streams = 0;
let listing = 0;

const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const jobPath = (id) => "v1/jobs/" + encodeURIComponent(id);

function authHeaders(extra) {
  const headers = Object.assign({}, extra || {});
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers["Authorization"] = "Bearer " + token;
  return headers;
}

function say(text, isError) {
  $("notice").textContent = text;
  $("notice").classList.toggle("error", Boolean(isError));
}

async function problemOf(response) {
  let text = response.status + " " + response.statusText;
  let field = null;
  try {
    const body = await response.json();
    const error = body.error || body;
    const message = error.message || (typeof body.detail === "string" ? body.detail : "");
    field = typeof error.field === "string" ? error.field : null;
    const named = field && !String(message).startsWith(field + ":") ? field + ": " : "";
    if (message) text = response.status + ": " + named + message;
  } catch (_) { /* not JSON: the status line says enough */ }
  if (response.status === 401 || response.status === 403) text += " (enter a token above)";
  return { text, field };
}

async function problem(response) {
  return (await problemOf(response)).text;
}

async function getJSON(path) {
  const response = await fetch(path, { headers: authHeaders(), cache: "no-store" });
  if (!response.ok) throw new Error(await problem(response));
  return response.json();
}

function ago(created) {
  const s = Math.max(0, Date.now() / 1000 - created);
  if (s < 60) return Math.floor(s) + " s ago";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  if (s < 86400) return Math.floor(s / 3600) + " h ago";
  return Math.floor(s / 86400) + " d ago";
}

function took(seconds) {
  if (seconds < 60) return seconds.toFixed(seconds < 10 ? 1 : 0) + " s";
  return Math.floor(seconds / 60) + " min " + Math.round(seconds % 60) + " s";
}

function badge(kind, value, known) {
  const span = document.createElement("span");
  span.className = "badge " + kind + "-" + (known.has(value) ? value : "other");
  span.textContent = String(value).replace(/_/g, " ");
  return span;
}

function stateOf(job) {
  let state = jobs.get(job.id);
  if (state) return state;
  const tr = document.createElement("tr");
  const cells = {};
  for (const name of COLUMNS) {
    cells[name] = tr.appendChild(document.createElement("td"));
    cells[name].className = "c-" + name;
  }
  tr.dataset.job = job.id;
  state = { job, tr, cells, total: 0, finished: 0, lastSeq: 0, following: false, retryAt: 0,
    ending: "" };
  jobs.set(job.id, state);
  place(state);
  return state;
}

function place(state) {
  const body = $("jobs");
  const empty = body.querySelector("tr.empty");
  if (empty) empty.remove();
  const newer = (other) => other.job.created >= state.job.created;
  const next = [...body.children].find((tr) => !newer(jobs.get(tr.dataset.job)));
  body.insertBefore(state.tr, next || null);
}

function progressText(state) {
  const status = state.job.status;
  if (state.total) return state.finished + "/" + state.total + " calls";
  if (status === "queued") return "waiting";
  if (status === "running") return state.finished ? state.finished + " calls" : "starting";
  const { started, finished } = state.job;
  return started && finished ? "took " + took(finished - started) : "";
}

function outcomeNode(job) {
  if (job.error && job.status !== "done") {
    const span = document.createElement("span");
    span.className = "fault";
    const kind = span.appendChild(document.createElement("b"));
    kind.textContent = job.error.kind + ": ";
    const message = String(job.error.message || "");
    const shown = message.length > 240 ? message.slice(0, 240) + "…" : message;
    span.appendChild(document.createTextNode(shown));
    span.title = message;
    return span;
  }
  if (!job.outcome) return document.createTextNode(FINAL.has(job.status) ? "—" : "");
  const wrap = document.createElement("span");
  wrap.appendChild(badge("outcome", job.outcome, OUTCOMES));
  const winner = job.winner;
  if (winner) {
    wrap.appendChild(document.createTextNode(" "));
    const side = wrap.appendChild(document.createElement("span"));
    side.className = "side";
    side.textContent = String(winner);
  }
  return wrap;
}

function reportLink(job) {
  const link = document.createElement("a");
  link.href = jobPath(job.id) + "/report";
  link.textContent = "report";
  link.target = "_blank";
  link.rel = "noopener";
  link.addEventListener("click", (event) => {
    if (!sessionStorage.getItem(TOKEN_KEY)) return;
    event.preventDefault();  // a link cannot carry the token: fetch it and save the page
    download(job.id).catch((error) => say(String(error.message || error), true));
  });
  return link;
}

async function download(id) {
  const response = await fetch(jobPath(id) + "/report", { headers: authHeaders() });
  if (!response.ok) throw new Error(await problem(response));
  const url = URL.createObjectURL(await response.blob());
  const save = document.createElement("a");
  save.href = url;
  save.download = "report-" + id.replace(/[^A-Za-z0-9_.-]/g, "_") + ".html";
  save.click();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function subjectNode(job) {
  const span = document.createElement("span");
  const text = job.topic || job.question;
  span.className = text ? "subject" : "subject none";
  span.textContent = text || (job.kind === "decision" ? "decision on recorded judgments" : "—");
  if (text) span.title = text;
  return span;
}

function render(state) {
  const { job, cells, tr } = state;
  tr.dataset.status = job.status;
  const code = document.createElement("code");
  code.textContent = job.id;
  cells.job.replaceChildren(subjectNode(job), code);
  cells.kind.textContent = job.kind;
  cells.status.replaceChildren(badge("status", job.status, STATUSES));
  cells.progress.textContent = progressText(state);
  cells.outcome.replaceChildren(outcomeNode(job));
  cells.age.textContent = ago(job.created);
  cells.age.title = new Date(job.created * 1000).toLocaleString();
  cells.report.replaceChildren(job.status === "done" ? reportLink(job) : "");
}

function parseBlock(block) {
  const event = { id: "", event: "message", data: [] };
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") event.data.push(value);
    else if (field === "id" || field === "event") event[field] = value;
  }
  return event.data.length ? event : null;
}

function apply(state, raw) {
  const event = JSON.parse(raw.data.join("\n"));
  const seq = Number(event.seq || raw.id || 0);
  if (seq && seq <= state.lastSeq) return;  // seen before a reconnect
  state.lastSeq = seq || state.lastSeq;
  const type = event.type || raw.event;
  const data = event.data || {};
  if (type === "running") { state.total = 0; state.finished = 0; }  // a restarted job replans
  if (type === "plan") state.total += Number(data.total) || 0;
  if (type === "finish") state.finished += 1;
  if (FINAL.has(type)) state.ending = type;  // shown with its outcome, once the job is read
  else if (STATUSES.has(type)) state.job = Object.assign({}, state.job, { status: type });
  render(state);
}

async function readStream(state) {
  const headers = authHeaders({ Accept: "text/event-stream" });
  if (state.lastSeq) headers["Last-Event-ID"] = String(state.lastSeq);
  const stop = new AbortController();
  const response = await fetch(jobPath(state.job.id) + "/events",
    { headers, cache: "no-store", signal: stop.signal });
  if (!response.ok || !response.body) throw new Error(await problem(response));
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      const held = buffer.endsWith("\r") ? "\r" : "";  // a CRLF split across two chunks
      const text = (held ? buffer.slice(0, -1) : buffer).replace(/\r\n?/g, "\n");
      const blocks = text.split("\n\n");
      buffer = blocks.pop() + held;
      for (const block of blocks) {
        const raw = parseBlock(block);
        if (raw) apply(state, raw);
        if (state.ending) return;
      }
    }
  } finally {
    stop.abort();
  }
}

async function follow(state) {
  state.following = true;
  streams += 1;
  try {
    await readStream(state);
  } catch (error) {
    say(state.job.id + ": " + String(error.message || error), true);
  }
  try {
    await refresh(state);  // the outcome, or the status the stream ended on
  } catch (error) {
    if (state.ending) state.job = Object.assign({}, state.job, { status: state.ending });
    render(state);
    say(String(error.message || error), true);
  } finally {
    state.ending = "";
    if (!FINAL.has(state.job.status)) {  // the stream broke off: pick it up again soon
      state.retryAt = Date.now() + RETRY_MS;
      setTimeout(pump, RETRY_MS);
    }
    state.following = false;
    streams -= 1;
    pump();
  }
}

async function refresh(state) {
  // The whole job (its result included): its listed fields, the winner from its decision.
  const job = await getJSON(jobPath(state.job.id));
  const decision = job.result && job.result.decision;
  state.job = Object.assign({}, state.job, {
    status: job.status, outcome: job.outcome, error: job.error, started: job.started,
    finished: job.finished, winner: (decision && decision.winner) || null,
  });
  render(state);
}

function pump() {
  const now = Date.now();
  const waiting = [...jobs.values()]
    .filter((s) => !FINAL.has(s.job.status) && !s.following && s.retryAt <= now)
    .sort((a, b) => b.job.created - a.job.created);
  while (streams < MAX_STREAMS && waiting.length) follow(waiting.shift());
}

function listQuery() {
  const params = new URLSearchParams();
  for (const name of ["status", "outcome"]) {
    const value = $(name + "-filter").value;
    if (value) params.set(name, value);
  }
  const query = params.toString();
  return query ? "?" + query : "";
}

function showEmpty(filtered) {
  const body = $("jobs");
  const old = body.querySelector("tr.empty");
  if (old) old.remove();
  if (body.children.length) return;
  const tr = body.appendChild(document.createElement("tr"));
  tr.className = "empty";
  const td = tr.appendChild(document.createElement("td"));
  td.colSpan = COLUMNS.length;
  td.textContent = filtered ? "No jobs match these filters."
    : "No jobs yet: start one above, or POST one to /v1/debates.";
}

async function loadJobs() {
  const mine = ++listing;
  const query = listQuery();
  try {
    const body = await getJSON("v1/jobs" + query);
    if (mine !== listing) return;  // the filters changed meanwhile: a newer list is coming
    const list = Array.isArray(body) ? body : [];
    const listed = new Set(list.map((job) => job.id));
    for (const [id, state] of jobs) {  // no longer listed (filtered out, or past the limit)
      if (!listed.has(id)) { state.tr.remove(); jobs.delete(id); }
    }
    for (const job of list) {
      const state = stateOf(job);
      if (!state.following) { state.job = job; render(state); }
    }
    showEmpty(Boolean(query));
    const live = list.filter((job) => !FINAL.has(job.status)).length;
    const shown = query ? " matching " + query.slice(1).replace(/&/g, ", ") : "";
    say(list.length + " jobs" + shown + ", " + live + " unfinished · listed "
      + new Date().toLocaleTimeString());
    pump();
  } catch (error) {
    if (mine === listing) say(String(error.message || error), true);
  }
}

function tell(text, kind) {
  $("submitted").textContent = text;
  $("submitted").className = kind || "";
}

function inputFor(field) {
  if (field === "topic") return $("topic");
  if (field && field.startsWith("config.seed")) return $("seed");
  if (field && (field.startsWith("transcript") || field === "body")) return $("transcript");
  return null;
}

function refuse(text, field) {
  tell(text, "error");
  const input = inputFor(field);
  if (input) { input.setAttribute("aria-invalid", "true"); input.focus(); }
}

async function submitJob(form, path, body) {
  for (const marked of form.querySelectorAll("[aria-invalid]")) {
    marked.removeAttribute("aria-invalid");
  }
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  try {
    const response = await fetch(path, {
      method: "POST", cache: "no-store", body: JSON.stringify(body),
      headers: authHeaders({ "Content-Type": "application/json" }),
    });
    if (!response.ok) {
      const { text, field } = await problemOf(response);
      refuse(text, field);
      return;
    }
    const accepted = await response.json();
    form.reset();
    tell("Accepted: job " + accepted.id + " is " + accepted.status + ".", "ok");
    $("status-filter").value = "";  // so that the new job is in the list
    $("outcome-filter").value = "";
    await loadJobs();
  } catch (error) {
    tell(String(error.message || error), "error");
  } finally {
    button.disabled = false;
  }
}

$("new-debate").addEventListener("submit", (event) => {
  event.preventDefault();
  const body = { topic: $("topic").value };
  const seed = $("seed").value.trim();  // not a number: sent as typed, for the API to name
  if (seed) body.config = { seed: /^[0-9]+$/.test(seed) ? Number(seed) : seed };
  submitJob(event.target, "v1/debates", body);
});

$("transcript-file").addEventListener("change", async () => {
  const file = $("transcript-file").files[0];
  if (!file) return;
  try {
    $("transcript").value = await file.text();
    $("transcript").removeAttribute("aria-invalid");
    tell(file.name + ": " + file.size + " bytes read; judge it below", "");
  } catch (error) {
    refuse(file.name + ": cannot be read (" + String(error.message || error) + ")", "transcript");
  }
});

$("new-judgement").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = $("transcript").value.trim();
  if (!text) {
    refuse("transcript: paste a transcript's JSON, or choose its file", "transcript");
    return;
  }
  let transcript;
  try {
    transcript = JSON.parse(text);
  } catch (error) {
    refuse("transcript: not JSON (" + String(error.message || error) + ")", "transcript");
    return;
  }
  const record = transcript && typeof transcript === "object" && !Array.isArray(transcript);
  if (record && transcript.transcript && !("arguments" in transcript)) {
    transcript = transcript.transcript;  // a result.json: judge the transcript it holds
  }
  submitJob(event.target, "v1/judgements", { transcript });
});

for (const name of ["status", "outcome"]) {
  $(name + "-filter").addEventListener("change", loadJobs);
}

function tick() {
  for (const state of jobs.values()) state.cells.age.textContent = ago(state.job.created);
}

$("auth").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = $("token").value.trim();
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
  $("token").value = "";
  $("token").placeholder = token ? "token set for this tab" : "bearer token";
  loadJobs();
});
if (sessionStorage.getItem(TOKEN_KEY)) $("token").placeholder = "token set for this tab";
loadJobs();
setInterval(tick, 5000);
setInterval(loadJobs, 15000);
""".replace("__MAX_STREAMS__", str(MAX_STREAMS))

_BODY = """<main>
<header class="bar"><h1>debate jobs</h1>
<form class="auth" id="auth" autocomplete="off">
<label for="token">Token</label>
<input id="token" type="password" placeholder="bearer token" spellcheck="false">
<button type="submit">Use</button></form></header>
<section class="new" aria-labelledby="new-title"><h2 id="new-title">New job</h2>
<form class="submit" id="new-debate" autocomplete="off" novalidate>
<h3>Debate a topic</h3>
<label class="field" for="topic">Topic
<input id="topic" type="text" spellcheck="true" placeholder="Should we adopt a four-day week?">
</label>
<div class="line"><label class="field" for="seed">Seed (optional)
<input id="seed" type="text" inputmode="numeric" placeholder="drawn by the server"></label>
<button type="submit">Start debate</button></div>
</form>
<form class="submit" id="new-judgement" autocomplete="off" novalidate>
<h3>Judge a transcript</h3>
<label class="field" for="transcript">Transcript JSON: paste it, or choose its file
(a result.json: its transcript)
<textarea id="transcript" spellcheck="false" rows="3"
placeholder='{"topic": "…", "arguments": […], "closings": […]}'></textarea></label>
<div class="line"><input id="transcript-file" type="file" accept=".json,application/json"
aria-label="Transcript file"><button type="submit">Judge transcript</button></div>
</form>
<p id="submitted" role="status"></p>
</section>
<div class="listbar"><div class="filters" id="filters">
<label for="status-filter">Status <select id="status-filter">__STATUS_OPTIONS__</select></label>
<label for="outcome-filter">Outcome <select id="outcome-filter">__OUTCOME_OPTIONS__</select>
</label></div>
<p id="notice" role="status">Loading jobs…</p></div>
<section class="scroll">
<table class="jobs"><thead><tr><th>Job</th><th>Kind</th><th>Status</th><th>Progress</th>
<th>Outcome</th><th>Age</th><th>Report</th></tr></thead>
<tbody id="jobs"><tr class="empty"><td colspan="7">Loading…</td></tr></tbody></table>
</section>
<footer>Updates live from each job's event stream · the token stays in this tab
(sessionStorage)</footer>
</main>"""


def _options(values: tuple[str, ...]) -> str:
    """A filter's options: "all" (no filter), then the values the API takes."""
    options = ['<option value="">all</option>']
    options += [f'<option value="{v}">{v.replace("_", " ")}</option>' for v in values]
    return "".join(options)


_BODY = _BODY.replace("__STATUS_OPTIONS__", _options(STATUSES)).replace(
    "__OUTCOME_OPTIONS__", _options(OUTCOMES)
)


def _digest(text: str) -> str:
    """A CSP source for an inline element: its exact text, hashed."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def content_security_policy() -> str:
    """The page's policy: its own inline script and style by hash, requests to itself only."""
    return "; ".join(
        (
            "default-src 'none'",
            f"script-src {_digest(PAGE_SCRIPT)}",
            f"style-src {_digest(PAGE_CSS)}",
            "connect-src 'self'",
            "img-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
            "require-trusted-types-for 'script'",
        )
    )


PAGE_HEADERS = {
    "Content-Security-Policy": content_security_policy(),
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
"""Sent with the page: the hashes above must match the exact inline texts, so they are
computed from the same constants the page is built from."""


def render_page() -> str:
    """The whole page: markup, inline CSS and script. Holds no job data (the script loads it)."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>debate jobs</title><style>{PAGE_CSS}</style></head>"
        f"<body>{_BODY}<script>{PAGE_SCRIPT}</script></body></html>\n"
    )


def add_page_routes(app: FastAPI, service: object | None = None) -> None:
    """Serve the page at ``GET /`` (left out of the OpenAPI document: it is not the API).

    Args:
        app: The service's FastAPI application.
        service: Accepted so the app can wire every route helper alike; the page needs
            nothing of the server's state, since its script reads the API with the
            visitor's token. Paths in the script are relative, so the page also works
            behind a reverse proxy that mounts the service under a prefix.
    """
    from fastapi.responses import HTMLResponse

    page = render_page()

    @app.get("/", include_in_schema=False, response_class=HTMLResponse)
    def watch_page() -> HTMLResponse:
        return HTMLResponse(page, headers=PAGE_HEADERS)
