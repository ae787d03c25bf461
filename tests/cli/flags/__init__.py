"""Every flag of every subcommand has an effect: one test per flag, per command,
a file per command (shared flags: test_model_flags.py, test_reading_flags.py).

Each test runs the real command (``debate._cli.main.main``) against an OpenAI-compatible
test server on 127.0.0.1 that logs every request, with and without the flag (or with two
values of it), and asserts on what differs: the requests the server received, the files
written, stdout, stderr or the exit code. Where the only observable is internal (a rate
limiter's waits, the embedded model's file), the test swaps in a recorder at the seam the
value goes through. docs/flags.md lists every flag and the test that shows its effect.

Flags owned by other parts of issue 17 (``--prices``, ``--max-cost``, ``--max-tokens``,
``--progress``, ``--fail-on``, ``--layout`` and the endpoint flags) are tested there.
"""
