"""Command-line interface: thin typer commands that call library functions, print, and set exit codes."""
