"""Workloads: collectives, copies and attention traffic, each emitted as a transfer DAG (Workload)."""
