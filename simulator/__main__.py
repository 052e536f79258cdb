"""`python -m simulator` is the `fabricsim` CLI."""

from simulator.cli.app import main

main()
