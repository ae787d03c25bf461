"""``python -m debate``: the same as the ``debate`` command."""

from debate._cli.main import main

raise SystemExit(main())
