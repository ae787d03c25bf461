"""The `debate` command: one module per subcommand (private; the Python API is `debate`).

A command line that starts with a command's name builds that command's parser alone
(``debate --help`` and anything else build every one), and a command module imports at its
top only what its flags need. What only its command uses (the statistics of validity
reports, scipy, the service, the council) is imported inside the command's function:
``debate run`` does not pay for ``debate audit``, nor, before its first model call, for the
judges' decision and the report (numpy), which it imports while it waits for the replies.
"""
