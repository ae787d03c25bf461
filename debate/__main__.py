"""``python -m debate``: the same as the ``debate`` command."""

from debate._cli.main import main

if __name__ == "__main__":  # not when imported by a spawned process (debate serve's runner)
    raise SystemExit(main())
