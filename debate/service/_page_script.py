"""The script of the page (``GET /``), kept apart from its markup and policy.

What it does (``debate.service._page`` tells why): lists the token's jobs from ``GET
/v1/jobs`` (summaries, filtered there), follows each unfinished job's event stream through
``fetch``, submits debates and transcripts, and writes every server value with
``textContent``. The page's Content-Security-Policy allows exactly this text by its hash.
"""

from __future__ import annotations

MAX_STREAMS = 4
"""Event streams the page follows at once. A browser opens about six HTTP/1.1 connections
per host; the rest stay free for the page's own requests. Jobs beyond it are refreshed
from the job list until a stream is free."""

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
