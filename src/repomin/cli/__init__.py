"""The command-line interface (thin: parse, build, execute, map errors to exit codes)."""
