"""The page to watch jobs: served with its policy, and updated live in headless Chromium.

The page is checked against a stand-in app in this file that speaks the service's documented
shapes (``GET /v1/jobs``, ``GET /v1/jobs/{id}``, Server-Sent Events of ``JobEvent``s with
``id:``/``event:``/``data:``): it lets a test script a job's life exactly (a slow run, an
outcome, a failure with hostile text), which the real runner would make slow or fragile.
"""

from __future__ import annotations

import asyncio
import base64
import fcntl
import hashlib
import json
import os
import re
import select
import shutil
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from fastapi import FastAPI, Header, Request  # noqa: E402
from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse  # noqa: E402

from debate.service._models import (  # noqa: E402
    FINAL,
    Accepted,
    DebateRequest,
    Job,
    JobError,
    JobEvent,
    JobSummary,
)
from debate.service._page import (  # noqa: E402
    PAGE_CSS,
    PAGE_SCRIPT,
    add_page_routes,
    content_security_policy,
    render_page,
)
from debate.service._summary import OUTCOMES, STATUSES, job_summary  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class StandIn:
    """Jobs and their events in memory, served in the service's shapes.

    A token, when set, is required as ``Authorization: Bearer`` on every ``/v1`` route, as
    the real service requires one when it has token hashes.
    """

    def __init__(self, token: str | None = None, drop_after: int | None = None) -> None:
        self.token = token
        self.drop_after = drop_after
        """Break each job's first event stream off after this many events (a lost
        connection), so the page must reconnect with ``Last-Event-ID``."""
        self.jobs: dict[str, Job] = {}
        self.topics: dict[str, str] = {}
        """Each debate job's topic, as its request held it."""
        self.events: dict[str, list[JobEvent]] = {}
        self.requests: list[tuple[str, str]] = []
        """(path, Authorization header) of each ``/v1`` request, in order."""
        self.resumed: list[int] = []
        """``Last-Event-ID`` of each event stream request (0 when absent)."""

    def add(self, job: Job) -> None:
        self.jobs[job.id] = job
        self.events.setdefault(job.id, [])

    def emit(self, job_id: str, type_: str, **data: Any) -> None:
        seq = len(self.events[job_id]) + 1
        event = JobEvent(job=job_id, seq=seq, type=type_, time=time.time(), data=data)
        self.events[job_id].append(event)
        job = self.jobs[job_id]
        update: dict[str, Any] = {"events": seq}
        if type_ in ("running", *FINAL):
            update["status"] = type_
        self.jobs[job_id] = job.model_copy(update=update)

    def finish(self, job_id: str, **update: Any) -> None:
        """Settle a job's final fields, then send its final event (the record comes first)."""
        self.jobs[job_id] = self.jobs[job_id].model_copy(update=update)
        self.emit(job_id, update["status"])

    async def script(self, job_id: str, calls: int, pause: float) -> None:
        """A debate's life: queued, running, a plan, ``calls`` steps, then done with a winner."""
        await asyncio.sleep(pause)
        self.emit(job_id, "running")
        self.emit(job_id, "plan", command="run", total=calls, items=None)
        for i in range(calls):
            await asyncio.sleep(pause)
            actor = "PRO" if i % 2 == 0 else "CON"
            self.emit(job_id, "start", phase="opening", actor=actor)
            self.emit(job_id, "finish", phase="opening", actor=actor, ok=True)
        result = {"decision": {"outcome": "winner", "winner": "CON"}}
        self.finish(job_id, status="done", outcome="winner", result=result, finished=time.time())


def stand_in_app(stand_in: StandIn, *, calls: int = 12, pause: float = 0.25) -> FastAPI:
    """The documented endpoints the page uses, over ``stand_in``; POST runs a scripted job."""
    app = FastAPI()
    tasks: set[asyncio.Task[None]] = set()

    @app.middleware("http")
    async def auth(request: Request, call_next: Any) -> Any:
        if request.url.path.startswith("/v1"):
            given = request.headers.get("authorization", "")
            stand_in.requests.append((request.url.path, given))
            if stand_in.token and given != f"Bearer {stand_in.token}":
                error = JobError(kind="auth", message="send Authorization: Bearer <token>")
                return JSONResponse({"error": error.model_dump()}, status_code=401)
        return await call_next(request)

    @app.get("/v1/jobs")
    def list_jobs(status: str | None = None, outcome: str | None = None) -> list[JobSummary]:
        jobs = sorted(stand_in.jobs.values(), key=lambda job: -job.created)
        return [
            job_summary(job, DebateRequest(topic=stand_in.topics.get(job.id, "?")))
            for job in jobs
            if status in (None, job.status) and outcome in (None, job.outcome)
        ]

    @app.get("/v1/jobs/{job_id}")
    def get_job(job_id: str) -> Job:
        return stand_in.jobs[job_id]

    @app.get("/v1/jobs/{job_id}/report", response_class=HTMLResponse)
    def report(job_id: str) -> str:
        return "<!DOCTYPE html><title>report</title><p>report</p>"

    @app.post("/v1/debates", status_code=202)
    async def submit(body: dict[str, Any]) -> Accepted:
        job_id = f"job-{len(stand_in.jobs) + 1}"
        stand_in.topics[job_id] = body["topic"]
        stand_in.add(Job(id=job_id, kind="debate", status="queued", created=time.time()))
        stand_in.emit(job_id, "queued")
        task = asyncio.get_running_loop().create_task(stand_in.script(job_id, calls, pause))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        href = f"/v1/jobs/{job_id}"
        return Accepted(
            id=job_id, status="queued", href=href, events=href + "/events", report=href + "/report"
        )

    @app.get("/v1/jobs/{job_id}/events")
    def events(job_id: str, last_event_id: int = Header(default=0)) -> StreamingResponse:
        stand_in.resumed.append(last_event_id)
        limit = stand_in.drop_after if last_event_id == 0 else None
        return StreamingResponse(
            _sse(stand_in, job_id, last_event_id, limit), media_type="text/event-stream"
        )

    add_page_routes(app, None)
    return app


async def _sse(stand_in: StandIn, job_id: str, after: int, limit: int | None) -> AsyncIterator[str]:
    """Send the job's events after ``after``, then each new one, until the final one."""
    sent = after
    while True:
        for event in stand_in.events[job_id][sent:]:
            if limit is not None and event.seq > after + limit:
                return  # the connection is lost mid-job
            sent = event.seq
            yield f"id: {event.seq}\nevent: {event.type}\ndata: {event.model_dump_json()}\n\n"
            if event.type in FINAL:
                return
        await asyncio.sleep(0.05)


CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid(created: float, n: int) -> str:
    """An id shaped like the store's (26 Crockford base-32 characters), fixed by ``n``."""
    value = (int(created * 1000) << 80) | (n * 0x9E3779B97F4A7C15 % (1 << 80))
    return "".join(CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


TOPICS = {
    "queued": "Should cities ban cars from their centres?",
    "running": "Should we adopt a four-day working week?",
    "winner": "Should the service keep results for 30 days rather than 7?",
    "too_close": "Is remote work better for junior engineers?",
    "irreconcilable": "Should the team rewrite the billing system in Rust?",
    "failed": "Should we move the database to PostgreSQL this quarter?",
}
"""A topic for each job of ``several_jobs``."""


def several_jobs(stand_in: StandIn, now: float) -> dict[str, str]:
    """One job in each state the page shows; their ids by name."""
    made = {
        "queued": ("debate", "queued", 4, None, None),
        "running": ("debate", "running", 50, None, None),
        "winner": ("debate", "done", 200, "winner", "PRO"),
        "too_close": ("judgement", "done", 420, "too_close", None),
        "irreconcilable": ("debate", "done", 760, "irreconcilable", None),
        "failed": ("debate", "failed", 1500, None, None),
    }
    ids: dict[str, str] = {}
    for n, (name, (kind, status, age, outcome, winner)) in enumerate(made.items()):
        created = now - age
        job_id = ids[name] = ulid(created, n)
        stand_in.add(Job(id=job_id, kind=kind, status="queued", created=created))
        stand_in.topics[job_id] = TOPICS[name]
        stand_in.emit(job_id, "queued")
        if status == "queued":
            continue
        stand_in.emit(job_id, "running")
        stand_in.emit(job_id, "plan", command="run", total=12, items=None)
        for _ in range(7 if status == "running" else 12):
            stand_in.emit(job_id, "finish", phase="judge", actor="risk", ok=True)
        times = {"started": created + 1, "finished": created + 1 + 2.5 * (n + 5)}
        if status == "done":
            result = {"decision": {"outcome": outcome, "winner": winner}}
            stand_in.finish(job_id, status="done", outcome=outcome, result=result, **times)
        elif status == "failed":
            message = "the model server answered 503 three times; retry later or lower --rpm"
            error = JobError(kind="provider", message=message)
            stand_in.finish(job_id, status="failed", error=error, **times)
    return ids


class Served:
    """A uvicorn server in a thread on 127.0.0.1, as the real service runs."""

    def __init__(self, app: FastAPI) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def stand_in() -> StandIn:
    return StandIn()


@pytest.fixture
def served(stand_in: StandIn) -> Iterator[str]:
    with Served(stand_in_app(stand_in)) as url:
        yield url


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe.

    ``--dump-dom`` alone cannot check a page that updates from a stream: its virtual time
    runs ahead of the server's real time, so the page is dumped before the job ends. The
    protocol lets the test wait, in real time, for what a person would see. The pipe needs
    no port and no extra package.
    """

    def __init__(self, profile: Path) -> None:
        assert CHROMIUM is not None
        to_browser, self._out = os.pipe()
        self._in, from_browser = os.pipe()
        # Chromium reads commands on fd 3 and writes replies on fd 4; move the pipe's ends
        # clear of 3 and 4 first, so that bash's redirections cannot close one another.
        theirs = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser, from_browser)]
        os.close(to_browser)
        os.close(from_browser)
        redirect = f'exec "$@" 3<&{theirs[0]} 4>&{theirs[1]} {theirs[0]}<&- {theirs[1]}>&-'
        flags = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--hide-scrollbars",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile}",
        ]
        self.process = subprocess.Popen(
            ["bash", "-c", redirect, "bash", CHROMIUM, *flags, "about:blank"],
            pass_fds=theirs,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for fd in theirs:
            os.close(fd)
        self._buffer = b""
        self._next = 0
        self.session = ""

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Call a protocol method (on the open page, if any) and return its result."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if self.session and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self.session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read(deadline=time.monotonic() + 60)
            if reply.get("id") == self._next:
                assert "error" not in reply, f"{method}: {reply['error']}"
                return dict(reply.get("result", {}))

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._in], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, "chromium did not answer"
            chunk = os.read(self._in, 1 << 20)
            assert chunk, "chromium closed its pipe"
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return dict(json.loads(message))

    def open(self, url: str, *, width: int = 1280, height: int = 800) -> None:
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        self.resize(width, height)
        self.send("Page.navigate", url=url)

    def resize(self, width: int, height: int) -> None:
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float) -> Any:
        """Poll ``expression`` in the page until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while not (value := self.evaluate(expression)):
            assert time.monotonic() < deadline, f"page never showed: {expression}"
            time.sleep(0.1)
        return value

    def screenshot(self, path: Path, width: int = 1280) -> None:
        """A PNG of the whole page at ``width`` CSS pixels."""
        self.resize(width, 200)  # the page's own height, not the window's
        height = int(self.evaluate("document.documentElement.scrollHeight"))
        self.resize(width, height)
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(data["data"]))

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.send("Browser.close")
        except (AssertionError, OSError):
            pass  # already gone: the wait below reaps it
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        os.close(self._out)
        os.close(self._in)


def row_of(job_id: str) -> str:
    """A page expression: the text of the job's row, or null while there is none."""
    selector = json.dumps(f'tr[data-job="{job_id}"]')
    return f"document.querySelector({selector})?.innerText"


def test_page_is_self_contained_and_allows_only_its_own_script_and_style() -> None:
    page = render_page()
    policy = content_security_policy()
    for text in (PAGE_SCRIPT, PAGE_CSS):
        digest = hashlib.sha256(text.encode()).digest()
        assert f"'sha256-{base64.b64encode(digest).decode()}'" in policy
        assert text in page  # the hash is of the exact inline text
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert page.count("<script") == 1 and page.count("<style") == 1
    # Nothing loaded from elsewhere: no src or href attribute, no URL with a scheme.
    assert not re.search(r"\s(src|href)=", page)
    assert not re.search(r"https?://", page)
    # Untrusted text never goes through an HTML sink, and the token never into a URL.
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write", page)
    assert "EventSource" not in PAGE_SCRIPT and "sessionStorage" in PAGE_SCRIPT
    # The forms and the filters, with every value the API's filters take and no other.
    for form in ('id="new-debate"', 'id="topic"', 'id="seed"', 'id="new-judgement"'):
        assert form in page
    assert 'id="transcript"' in page and 'type="file"' in page
    for name, values in (("status", STATUSES), ("outcome", OUTCOMES)):
        select = re.search(f'<select id="{name}-filter">(.*?)</select>', page)
        assert select is not None
        assert re.findall(r'value="([^"]*)"', select.group(1)) == ["", *values]


def test_page_route_sends_the_policy_and_stays_out_of_the_api_document(served: str) -> None:
    response = httpx.get(served + "/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["content-security-policy"] == content_security_policy()
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["cache-control"] == "no-store"
    assert response.text == render_page()
    assert "/" not in httpx.get(served + "/openapi.json").json()["paths"]


needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH")


@needs_chromium
def test_page_follows_the_event_stream_until_the_job_is_done(
    stand_in: StandIn, served: str, tmp_path: Path
) -> None:
    accepted = httpx.post(served + "/v1/debates", json={"topic": "Adopt the plan?"})
    assert accepted.status_code == 202
    job_id = accepted.json()["id"]
    with Browser(tmp_path / "profile") as browser:
        browser.open(served + "/")
        first = browser.wait_for(row_of(job_id), timeout=20)
        # The list said the job was unfinished; only the stream can take it to done.
        assert "done" not in first and "winner" not in first
        selector = json.dumps(f'tr[data-job="{job_id}"][data-status="done"]')
        browser.wait_for(f"document.querySelector({selector})?.innerText", timeout=30)
        text = browser.evaluate(row_of(job_id))
        dom = browser.evaluate("document.documentElement.outerHTML")
    assert stand_in.jobs[job_id].status == "done"
    cells = text.split("\t")
    assert cells[0].strip() == f"Adopt the plan?\n{job_id}"  # the topic, then the id
    assert cells[1] == "debate" and cells[2] == "done"
    assert cells[3] == "12/12 calls"  # progress counted from the plan and finish events
    assert "winner" in cells[4] and "CON" in cells[4]
    assert cells[6] == "report"
    assert f'href="v1/jobs/{job_id}/report"' in dom
    paths = [path for path, _ in stand_in.requests][1:]  # the page's, after the POST
    assert paths[0] == "/v1/jobs"  # listed once first, then followed the stream
    assert paths.count(f"/v1/jobs/{job_id}/events") == 1
    assert f"/v1/jobs/{job_id}" in paths  # the outcome read from the job when final


@needs_chromium
def test_page_lists_every_state_newest_first(
    stand_in: StandIn, served: str, tmp_path: Path
) -> None:
    ids = several_jobs(stand_in, time.time())
    with Browser(tmp_path / "profile") as browser:
        browser.open(served + "/")
        browser.wait_for(f"({row_of(ids['running'])} || '').includes('7/12 calls')", timeout=20)
        rows = browser.evaluate(
            "[...document.querySelectorAll('#jobs tr')].map(tr => tr.innerText.split('\\t'))"
        )
    # Newest first; the running job's progress came from replaying its stream.
    assert [r[0].strip().split("\n")[-1] for r in rows] == list(ids.values())
    by_id = {r[0].strip().split("\n")[-1]: r for r in rows}
    assert by_id[ids["winner"]][0].startswith(TOPICS["winner"])
    assert by_id[ids["queued"]][2:4] == ["queued", "waiting"]
    assert by_id[ids["running"]][2:4] == ["running", "7/12 calls"]
    assert by_id[ids["winner"]][2] == "done" and by_id[ids["winner"]][4] == "winner PRO"
    assert by_id[ids["too_close"]][4] == "too close"
    assert by_id[ids["irreconcilable"]][4] == "irreconcilable"
    assert [by_id[ids[name]][3] for name in ("winner", "too_close", "irreconcilable")] == [
        "took 18 s",
        "took 20 s",
        "took 23 s",
    ]  # a job finished before the page opened has no stream to count calls from
    assert by_id[ids["failed"]][2] == "failed"
    assert by_id[ids["failed"]][4].startswith("provider: the model server answered 503")
    ages = [by_id[i][5] for i in ids.values()]
    assert all(re.fullmatch(r"\d+ s ago", age) for age in ages[:2])  # seconds pass meanwhile
    assert ages[2:] == ["3 min ago", "7 min ago", "12 min ago", "25 min ago"]
    assert [by_id[i][6] for i in ids.values()] == ["", "", "report", "report", "report", ""]


@needs_chromium
def test_page_shows_hostile_text_as_text(stand_in: StandIn, served: str, tmp_path: Path) -> None:
    job_id = "job-<i>x</i>"
    hostile = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
    stand_in.add(Job(id=job_id, kind="debate", status="queued", created=time.time()))
    stand_in.topics[job_id] = "<b>bold</b>" + hostile
    stand_in.finish(job_id, status="failed", error=JobError(kind="runtime", message=hostile))
    with Browser(tmp_path / "profile") as browser:
        browser.open(served + "/")
        text = browser.wait_for(row_of(job_id), timeout=20)
        assert text.split("\t")[0].strip() == f"<b>bold</b>{hostile}\n{job_id}"
        assert hostile in text.split("\t")[4]
        found = "document.querySelectorAll('#jobs img, #jobs i, #jobs b:not(.fault b)').length"
        assert browser.evaluate(found) == 0
        assert browser.evaluate("document.querySelectorAll('script').length") == 1
        assert browser.evaluate("typeof window.pwned") == "undefined"


@needs_chromium
def test_page_sends_the_token_from_its_field_never_in_a_url(tmp_path: Path) -> None:
    token = "s3cret-token"
    stand_in = StandIn(token=token)
    job_id = "job-1"
    stand_in.add(Job(id=job_id, kind="debate", status="queued", created=time.time()))
    stand_in.finish(job_id, status="done", outcome="winner", result=None)
    with Served(stand_in_app(stand_in)) as url, Browser(tmp_path / "profile") as browser:
        browser.open(url + "/")
        refused = browser.wait_for("document.querySelector('#notice.error')?.innerText", 20)
        assert refused.startswith("401: send Authorization") and "enter a token" in refused
        before = len(stand_in.requests)
        browser.evaluate(
            f"document.getElementById('token').value = {json.dumps(token)};"
            "document.getElementById('auth').requestSubmit()"
        )
        browser.wait_for(row_of(job_id), timeout=20)
        assert browser.evaluate("document.getElementById('token').value") == ""
        assert browser.evaluate("sessionStorage.getItem('debate-service-token')") == token
        assert token not in browser.evaluate("location.href")
    sent = stand_in.requests[before:]
    assert sent and all(header == f"Bearer {token}" for _, header in sent)
    assert all(token not in path for path, _ in stand_in.requests)


@needs_chromium
def test_page_resumes_a_broken_stream_where_it_left_off(tmp_path: Path) -> None:
    stand_in = StandIn(drop_after=5)
    with Served(stand_in_app(stand_in, calls=8, pause=0.2)) as url:
        job_id = httpx.post(url + "/v1/debates", json={"topic": "t"}).json()["id"]
        with Browser(tmp_path / "profile") as browser:
            browser.open(url + "/")
            selector = json.dumps(f'tr[data-job="{job_id}"][data-status="done"]')
            browser.wait_for(f"!!document.querySelector({selector})", timeout=30)
            text = browser.evaluate(row_of(job_id))
    assert stand_in.resumed[0] == 0 and stand_in.resumed[1] >= 5
    assert text.split("\t")[3] == "8/8 calls"  # no event counted twice, none missed


def write_screenshot(path: Path, width: int = 1280) -> None:
    """The page with a job in each state of the stand-in, ``width`` px wide.

    docs/service.png and docs/service-420.png are of ``debate serve --model scripted``
    instead (README's screenshots show what a person gets); this one needs no model.
    """
    import tempfile

    stand_in = StandIn()
    ids = several_jobs(stand_in, time.time())
    with (
        tempfile.TemporaryDirectory() as profile,
        Served(stand_in_app(stand_in)) as url,
        Browser(Path(profile)) as browser,
    ):
        browser.open(url + "/")
        browser.wait_for(f"({row_of(ids['running'])} || '').includes('7/12 calls')", timeout=20)
        browser.screenshot(path, width=width)


if __name__ == "__main__":
    import sys

    write_screenshot(Path(sys.argv[1] if len(sys.argv) > 1 else "service-stand-in.png"))


def real_app(database: Path, base_url: str) -> FastAPI | None:
    """The service's own app over a model server, with the page; None before it exists."""
    try:
        from debate.service import create_app
    except ImportError:
        return None
    from debate.records import RunConfig
    from debate.service import ServiceSettings

    config = RunConfig(model="m", base_url=base_url, api_key_env="")
    app = create_app(ServiceSettings(database=str(database)), config)
    if not any(getattr(route, "path", None) == "/" for route in app.routes):
        add_page_routes(app, None)
    return app


@needs_chromium
def test_page_watches_a_real_debate_job_finish(tmp_path: Path) -> None:
    from tests.support.openai_server import FakeOpenAIServer

    with FakeOpenAIServer(latency=0.3) as model:
        app = real_app(tmp_path / "service.sqlite", model.base_url)
        if app is None:
            pytest.skip("debate.service._app (issue 19b) is not on this branch yet")
        with Served(app) as url, Browser(tmp_path / "profile") as browser:
            job_id = httpx.post(url + "/v1/debates", json={"topic": "Adopt it?"}).json()["id"]
            browser.open(url + "/")
            first = browser.wait_for(row_of(job_id), timeout=20)
            selector = json.dumps(f'tr[data-job="{job_id}"][data-status="done"]')
            browser.wait_for(f"!!document.querySelector({selector})", timeout=60)
            cells = browser.evaluate(row_of(job_id)).split("\t")
            job = httpx.get(f"{url}/v1/jobs/{job_id}").json()
    assert "done" not in first  # it finished while the page watched
    assert job["status"] == "done" and cells[2] == "done"
    assert re.fullmatch(r"(\d+)/\1 calls", cells[3])  # every planned call finished
    assert cells[4].startswith(job["outcome"].replace("_", " "))


def notice_after(browser: Browser, before: str) -> str:
    """Wait for the form's notice to change from ``before``; its class and text."""
    read = "(() => { const p = document.getElementById('submitted');"
    read += " return p.className + '|' + p.textContent; })()"
    value = browser.wait_for(f"(v => v !== {json.dumps(before)} && v)({read})", timeout=20)
    return str(value)


def press(browser: Browser, form: str, **values: str) -> None:
    """Fill the form's fields by id, then submit it as its button would."""
    for field, value in values.items():
        browser.evaluate(
            f"document.getElementById({json.dumps(field)}).value = {json.dumps(value)}"
        )
    browser.evaluate(f"document.getElementById({json.dumps(form)}).requestSubmit()")


@needs_chromium
def test_page_submits_a_debate_and_a_transcript_and_shows_refusals(tmp_path: Path) -> None:
    from tests.support.helpers import transcript
    from tests.support.openai_server import FakeOpenAIServer

    upload = tmp_path / "transcript.json"
    upload.write_text(transcript(topic="Judge the uploaded debate?").model_dump_json())
    with FakeOpenAIServer(latency=0.05) as model:
        app = real_app(tmp_path / "service.sqlite", model.base_url)
        assert app is not None
        with Served(app) as url, Browser(tmp_path / "profile") as browser:
            browser.open(url + "/")
            browser.wait_for(
                "document.getElementById('notice')?.textContent.includes('0 jobs')", 20
            )
            shown: dict[str, str] = {}
            press(browser, "new-debate", topic="", seed="")
            shown["empty"] = notice_after(browser, "|")
            invalid = "document.getElementById('topic').getAttribute('aria-invalid')"
            shown["empty_marked"] = browser.evaluate(invalid)
            press(browser, "new-debate", topic="Adopt the plan?", seed="abc")
            shown["seed"] = notice_after(browser, shown["empty"])
            press(browser, "new-judgement", transcript="{not json")
            shown["json"] = notice_after(browser, shown["seed"])
            press(browser, "new-judgement", transcript='{"topic": "No arguments?"}')
            shown["arguments"] = notice_after(browser, shown["json"])
            refused = httpx.get(url + "/v1/jobs").json()
            press(browser, "new-debate", topic="Adopt the plan?", seed="7")
            shown["debate"] = notice_after(browser, shown["arguments"])
            debate_id = shown["debate"].split("job ")[1].split(" ")[0]
            browser.wait_for(row_of(debate_id), timeout=20)
            # The file chooser: the file's text lands in the field, then it is judged.
            node = browser.send(
                "Runtime.evaluate", expression="document.getElementById('transcript-file')"
            )["result"]["objectId"]
            browser.send("DOM.setFileInputFiles", files=[str(upload)], objectId=node)
            shown["read"] = notice_after(browser, shown["debate"])
            browser.evaluate("document.getElementById('new-judgement').requestSubmit()")
            shown["judgement"] = notice_after(browser, shown["read"])
            judged_id = shown["judgement"].split("job ")[1].split(" ")[0]
            for job_id in (debate_id, judged_id):
                selector = json.dumps(f'tr[data-job="{job_id}"][data-status="done"]')
                browser.wait_for(f"!!document.querySelector({selector})", timeout=90)
            rows = {i: browser.evaluate(row_of(i)).split("\t") for i in (debate_id, judged_id)}
            # The filters ask the API: none failed; the judged job's outcome lists it.
            browser.evaluate(
                "const s = document.getElementById('status-filter');"
                "s.value = 'failed'; s.dispatchEvent(new Event('change'))"
            )
            empty = browser.wait_for(
                "document.querySelector('#jobs tr.empty')?.innerText", timeout=20
            )
            debate = httpx.get(f"{url}/v1/jobs/{debate_id}").json()
    assert shown["empty"].startswith("error|422: topic: ")
    assert shown["empty_marked"] == "true"
    assert shown["seed"].startswith("error|422: config.seed: ")
    assert shown["json"].startswith("error|transcript: not JSON")
    assert shown["arguments"].startswith("error|422: transcript.arguments: ")
    assert refused == []  # nothing refused was queued
    assert shown["debate"].startswith("ok|Accepted: job ")
    assert shown["read"].startswith("|transcript.json: ")
    assert shown["judgement"].startswith("ok|Accepted: job ")
    assert rows[debate_id][0].strip() == f"Adopt the plan?\n{debate_id}"
    assert rows[judged_id][0].strip() == f"Judge the uploaded debate?\n{judged_id}"
    assert rows[judged_id][1] == "judgement"
    assert debate["result"]["seed"] == 7  # the seed typed in the form
    assert rows[debate_id][4].startswith(debate["outcome"].replace("_", " "))
    assert empty == "No jobs match these filters."
