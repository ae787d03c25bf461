"""The structured-output forms of the OpenAI backend, and which one each endpoint takes.

A server that refuses the form of ``response_format`` is asked again in a form further
down (see :mod:`debate.models.openai`); the form is learned once per endpoint and model for
the life of the process (:data:`FORMS`), shared by every model object that points there.
"""

from __future__ import annotations

import asyncio
import re
import threading
from typing import Any, Literal

Mode = Literal["strict", "json_schema", "json_object_schema", "json_object"]
MODES: tuple[Mode, ...] = ("strict", "json_schema", "json_object_schema", "json_object")
"""Structured-output forms, most to least constrained; a rejected form steps one down."""

FORMAT_ERROR = re.compile(r"response_format|json_schema|json_object|schema|'text'", re.IGNORECASE)
"""What an error body says when the server refuses the requested format itself."""
TYPE_REFUSED = re.compile(
    r"json_object|json_schema\W+(?:is\s+)?(?:not|un)\s*(?:supported|allowed|permitted)",
    re.IGNORECASE,
)
"""What a refusal of ``json_schema`` says when the server does not take that type at all: it
names the types it takes (llama-cpp-python: "Input should be 'text' or 'json_object'"), or
says ``json_schema`` is not supported. The non-strict ``json_schema`` is then not tried."""
DEFAULT_FORM_WAIT = 1.0
"""Seconds at most a call waits for the first request of an endpoint and model whose form is
not yet known, before sending its own. A refused form is answered before any generation, so
the waiting calls learn it instead of each being refused; a request still out after this long
was taken. When the first request's connection is timed, the wait ends sooner (see
:data:`REFUSAL_FLOOR`)."""
REFUSAL_FLOOR = 0.1
"""Seconds a server may take to validate a request and refuse its format, beyond two round
trips. Once the probing request is connected after ``c`` seconds, a refusal comes within
``REFUSAL_FLOOR + 2c`` (``c`` holds at least one round trip, and the refusal takes one):
a request not refused by then was taken, and the calls waiting on it go ahead. Waiting out
the probe's whole reply instead held the second request of every run's first step back by
the model's latency (up to :data:`DEFAULT_FORM_WAIT`): 0.2 s of a 0.8 s debate on a 0.2 s
server, a second on a real model."""


_FormKey = tuple[str, str]
"""A chat-completions URL and a model name."""


class _Forms:
    """The structured-output form each endpoint and model takes, learned once per process.

    Shared by every :class:`OpenAIModel` (a run's debaters and judges are separate objects,
    and a batch or the service builds many). A form only ever moves down. Until a request in
    the current form has been answered, the calls of one event loop send one at a time: the
    first probes, the others wait for its answer, or until a refusal would have come (at most
    ``wait`` seconds), and then send in the form it left, so concurrent first calls are not
    all refused. Calls on another loop
    (another thread's run) do not wait across loops; they probe on their own, which costs a
    request, never a wrong form.
    """

    def __init__(self, wait: float = DEFAULT_FORM_WAIT) -> None:
        self.wait = wait
        self._lock = threading.Lock()
        self._modes: dict[_FormKey, Mode] = {}
        self._known: set[_FormKey] = set()
        """Keys whose current form has been answered (no waiting any more)."""
        self._probes: dict[_FormKey, asyncio.Future[None]] = {}
        """The request in flight that will tell the form of a key not yet known."""
        self._windows: dict[_FormKey, asyncio.Future[float]] = {}
        """Once the probe of a key is connected: the loop time by which it would have been
        refused (see :meth:`connected`)."""

    def mode(self, key: _FormKey) -> Mode:
        """The form requests to ``key`` are sent in now."""
        with self._lock:
            return self._modes.get(key, MODES[0])

    async def claim(self, key: _FormKey) -> tuple[Mode, asyncio.Future[None] | None]:
        """The form to send in, and the probe to :meth:`release` if this call is the probe.

        A call that finds another call of its loop probing waits for its answer: up to
        ``wait``, or until a refusal would have come (:meth:`connected`), if sooner.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            mode = self._modes.get(key, MODES[0])
            if key in self._known:
                return mode, None
            probe = self._probes.get(key)
            if probe is None or probe.done():
                mine: asyncio.Future[None] = loop.create_future()
                self._probes[key] = mine
                self._windows[key] = loop.create_future()
                return mode, mine
            if probe.get_loop() is not loop:
                return mode, None
            window = self._windows.get(key)
        await self._await_answer(probe, window, loop.time() + self.wait)
        return self.mode(key), None

    @staticmethod
    async def _await_answer(
        probe: asyncio.Future[None], window: asyncio.Future[float] | None, deadline: float
    ) -> None:
        """Wait for ``probe`` until ``deadline``, or until its refusal window has passed."""
        loop = asyncio.get_running_loop()
        while not probe.done():
            waiting: list[asyncio.Future[Any]] = [probe]
            end = deadline
            if window is not None and window.done():
                end = min(deadline, window.result())
            elif window is not None:
                waiting.append(window)
            left = end - loop.time()
            if left <= 0:
                return
            await asyncio.wait(waiting, timeout=left, return_when=asyncio.FIRST_COMPLETED)

    def connected(self, key: _FormKey, seconds: float) -> None:
        """The probe of ``key`` got its connection in ``seconds``.

        The calls waiting on it go ahead once a refusal would have come (:data:`REFUSAL_FLOOR`).
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            window = self._windows.get(key)
        if window is not None and not window.done() and window.get_loop() is loop:
            window.set_result(loop.time() + REFUSAL_FLOOR + 2 * seconds)

    @staticmethod
    def release(probe: asyncio.Future[None] | None) -> None:
        """Wake the calls waiting on ``probe`` (its request was answered, or failed)."""
        if probe is not None and not probe.done():
            probe.set_result(None)

    def answered(self, key: _FormKey, mode: Mode) -> None:
        """Note that a request in ``mode`` got a reply: the form of ``key`` is known."""
        with self._lock:
            if self._modes.get(key, MODES[0]) == mode:
                self._known.add(key)

    def step_down(self, key: _FormKey, to: Mode) -> Mode:
        """Move ``key`` down to ``to`` (never up: concurrent refusals may arrive late)."""
        with self._lock:
            current = MODES.index(self._modes.get(key, MODES[0]))
            if MODES.index(to) > current:
                self._modes[key] = to
                self._known.discard(key)
            return self._modes.get(key, MODES[0])

    def clear(self) -> None:
        """Forget every learned form (tests; a process that knows a server changed)."""
        with self._lock:
            self._modes.clear()
            self._known.clear()
            self._probes.clear()
            self._windows.clear()


FORMS = _Forms()
"""The process's structured-output forms, by endpoint and model."""


class _FormatRejected(Exception):
    """The server refused the form of ``response_format`` (not the request as a whole)."""

    def __init__(self, reason: str, *, type_refused: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.type_refused = type_refused
        """The error says the server does not take a ``json_schema`` type at all."""


def _rejects_format(body: object, message: str) -> bool:
    """True when the error is about ``response_format``, not about the request's content.

    Judged from the error's text, since servers disagree on the status (400, 422, or 500 for
    llama-cpp-python's "Input should be 'text' or 'json_object'"); a prompt over the context
    limit or an overloaded server says nothing about the format and changes no form.
    """
    return FORMAT_ERROR.search(f"{message} {body}") is not None
