"""`python -m simulator` is the `fabricsim` CLI."""

try:
    from simulator.cli.app import main
except KeyboardInterrupt:  # Ctrl-C while Python is still importing the CLI: exit 130, no traceback
    raise SystemExit(130) from None

main()
