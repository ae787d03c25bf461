"""``python -m debate``: the same as the ``debate`` command."""

if __name__ == "__main__":  # not when imported by a spawned process (debate serve's runner)
    from debate._cli.entry import main

    raise SystemExit(main())
