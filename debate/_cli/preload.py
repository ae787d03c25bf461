"""What a debate needs after its model calls, imported while it waits for their replies.

``debate run`` imports before its first call only what that call needs (a config, the
prompts, the model client): the judges' decision (numpy, the panel's rules) and the report's
pages come into use after the last reply. Imported then, they would add about 0.2 s of CPU
between the judges' replies and the result; a thread imports them from the first reply on,
while the main thread mostly waits on the network for the next ones.

Nothing else changes: the main thread's own import of a module the thread is importing
waits for it (the import lock) and never sees it half-made, and an import that fails here
is left to fail again, with the same error, where the command needs it.
"""

from __future__ import annotations

import threading

from debate._preload import import_after_calls
from debate.runtime import Event, EventHandler, StepFinished


class Preloading:
    """An event handler that also starts the imports at the first reply (``handler``'s too).

    :meth:`join` waits for them, so the command never ends with the thread mid-import.
    """

    def __init__(self, handler: EventHandler | None) -> None:
        self.handler = handler
        self.thread: threading.Thread | None = None

    def __call__(self, event: Event) -> None:
        if self.thread is None and isinstance(event, StepFinished):
            self.thread = threading.Thread(
                target=import_after_calls, name="debate-imports", daemon=True
            )
            self.thread.start()
        if self.handler is not None:
            self.handler(event)

    def join(self) -> None:
        """Wait for the imports, if they started."""
        if self.thread is not None:
            self.thread.join()
