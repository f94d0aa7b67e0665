"""The command line: each command parses its options into one call, renders the result and
sets the exit code (docs/exit-codes.md). ``main._COMMANDS`` names every command and the
module holding it, imported only when the command runs, so `perflab --help` stays fast;
``common`` holds what the commands share (the store option, --format, output files)."""
