"""The `debate` command: one module per subcommand (private; the Python API is `debate`)."""
