"""Execution traces from other tools turned into transfer DAGs (MLCommons Chakra ET)."""
