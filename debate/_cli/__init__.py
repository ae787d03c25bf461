"""The `debate` command: one module per subcommand (private; the Python API is `debate`).

Every command's parser is built on each start (``debate --help`` lists them all), so a
command module imports at its top only what its flags need. What only its command uses (the
statistics of validity reports, scipy, the service, the council) is imported inside the
command's function: ``debate run`` does not pay for ``debate audit``.
"""
