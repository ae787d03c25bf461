"""How an event stream learns that its job has new events: polling, or LISTEN/NOTIFY.

On SQLite one server holds the file and its stream polls the store (:class:`PollWatch`).
On PostgreSQL the job may run on another replica; its runner's event writes send
``NOTIFY debate_events`` with the jobs' ids, and each process's :class:`EventFeed` keeps one
connection listening on a thread of its own and wakes the streams of those jobs
(:class:`NotifyWatch`), so a stream reads the store when there is something to read instead
of four times a second.

A stream clears its watch before reading the store and waits on it after, so a
notification that arrives while it reads is not lost. A lost listening connection is
opened again; meanwhile every watch wakes at its timeout and reads, as a poll would.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from types import TracebackType

logger = logging.getLogger(__name__)

RECONNECT_S = 1.0


class PollWatch:
    """A watch that only waits: the stream reads the store every ``interval`` seconds."""

    def __init__(self, interval: float) -> None:
        self.interval = interval

    def clear(self) -> None:
        """Nothing to clear: every wait is a poll."""

    async def wait(self, timeout: float) -> None:
        """Sleep the poll interval (or ``timeout``, if shorter)."""
        await asyncio.sleep(min(self.interval, timeout))

    def __enter__(self) -> PollWatch:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


class NotifyWatch:
    """Wakes when a NOTIFY names its job; made by :meth:`EventFeed.watch`."""

    def __init__(self, feed: EventFeed, job_id: str) -> None:
        self.feed = feed
        self.job_id = job_id
        self.loop = asyncio.get_running_loop()
        self.changed = asyncio.Event()

    def clear(self) -> None:
        """Forget the notifications so far (call before reading the store)."""
        self.changed.clear()

    async def wait(self, timeout: float) -> None:
        """Return when the job has new events, or after ``timeout`` seconds."""
        try:
            async with asyncio.timeout(timeout):
                await self.changed.wait()
        except TimeoutError:
            pass

    def __enter__(self) -> NotifyWatch:
        self.feed._add(self)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.feed._remove(self)


class EventFeed:
    """One listening connection per process, started by the first watch.

    Args:
        url: The database's URL.
        channel: The NOTIFY channel the stores write to (payload: job ids, comma-separated).
    """

    def __init__(self, url: str, channel: str) -> None:
        self.url = url
        self.channel = channel
        self._watches: dict[str, set[NotifyWatch]] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.listening = threading.Event()
        """Set while the connection listens (tests wait on it before writing)."""

    def watch(self, job_id: str) -> NotifyWatch:
        """A watch of one job's events (use it as a context manager, on an event loop)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._listen, name="debate-event-feed", daemon=True
                )
                self._thread.start()
        return NotifyWatch(self, job_id)

    def close(self) -> None:
        """Stop listening (the thread ends within a second)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(5)

    def _add(self, watch: NotifyWatch) -> None:
        with self._lock:
            self._watches.setdefault(watch.job_id, set()).add(watch)

    def _remove(self, watch: NotifyWatch) -> None:
        with self._lock:
            watches = self._watches.get(watch.job_id)
            if watches is not None:
                watches.discard(watch)
                if not watches:
                    del self._watches[watch.job_id]

    def _wake(self, job_ids: list[str] | None) -> None:
        """Wake the watches of these jobs (None: every watch)."""
        with self._lock:
            if job_ids is None:
                woken = [w for ws in self._watches.values() for w in ws]
            else:
                woken = [w for job in job_ids for w in self._watches.get(job, ())]
        for watch in woken:
            try:
                watch.loop.call_soon_threadsafe(watch.changed.set)
            except RuntimeError:  # its loop has closed: the stream is gone
                continue

    def _listen(self) -> None:
        import psycopg

        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as db:
                    db.execute(f"LISTEN {self.channel}")
                    self.listening.set()
                    self._wake(None)  # anything written before we listened is read now
                    while not self._stop.is_set():
                        for note in db.notifies(timeout=1.0):
                            self._wake(note.payload.split(","))
            except Exception as exc:  # a lost connection: watches poll until it is back
                self.listening.clear()
                logger.warning("event feed: %s; listening again in %.0fs", exc, RECONNECT_S)
                self._wake(None)
                self._stop.wait(RECONNECT_S)
        self.listening.clear()
