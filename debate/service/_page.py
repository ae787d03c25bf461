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

from debate.report import CSS as REPORT_CSS
from debate.service._page_script import PAGE_SCRIPT
from debate.service._summary import OUTCOMES, STATUSES

if TYPE_CHECKING:
    from fastapi import FastAPI

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
