"""Messages between a batch's parent process and a worker, over one pipe, from asyncio.

Each side reads in its event loop (``add_reader`` on the pipe) and writes from a sender
thread, so neither loop ever blocks on a full pipe: with both loops able to block in a
``send``, a parent and a worker each writing to the other could wait on each other for
ever. The sender takes every message queued since its last write and sends them as one
list, so a burst of events is one write and one read. The messages are tuples whose first
element names them (see :mod:`debate.batch._workers`).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

Message = tuple[Any, ...]
MAX_BATCH = 512
"""Messages sent in one write at most (a pickled list a few tens of kB long)."""


class Channel:
    """One end of a pipe: ``send`` from the loop's thread, ``on_message`` for what arrives.

    ``on_closed`` runs once when the other end is gone (its process ended or closed it).
    """

    def __init__(
        self,
        conn: Connection,
        on_message: Callable[[Message], None],
        on_closed: Callable[[], None],
    ) -> None:
        self.conn = conn
        self.on_message = on_message
        self.on_closed = on_closed
        self.open = True
        self._out: queue.SimpleQueue[Message | None] = queue.SimpleQueue()
        self._sender = threading.Thread(target=self._send_all, daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Begin reading in ``loop`` and sending from the sender thread."""
        self._loop = loop
        loop.add_reader(self.conn.fileno(), self._readable)
        self._sender.start()

    def send(self, message: Message) -> None:
        """Queue a message (never blocks; dropped once the other end is gone)."""
        if self.open:
            self._out.put(message)

    def close(self) -> None:
        """Stop reading; the sender writes what is queued, then stops."""
        if self._loop is not None and self.open:
            self._loop.remove_reader(self.conn.fileno())
        self.open = False
        self._out.put(None)

    def flush(self, timeout: float = 5.0) -> None:
        """Wait (blocking) until the sender has written everything queued before ``close``."""
        if self._sender.is_alive():
            self._sender.join(timeout)

    def _readable(self) -> None:
        try:
            while self.open and self.conn.poll():
                for message in self.conn.recv():
                    self.on_message(message)
        except (EOFError, OSError):
            self.close()
            self.on_closed()

    def _send_all(self) -> None:
        while True:
            message = self._out.get()
            if message is None:
                return
            batch = [message]
            last = False
            while len(batch) < MAX_BATCH:
                try:
                    more = self._out.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    last = True
                    break
                batch.append(more)
            try:
                self.conn.send(batch)
            except (OSError, ValueError):  # the other end is gone; its reader reports it
                return
            if last:
                return
