"""The command line: parses arguments and calls the library; no logic of its own."""
