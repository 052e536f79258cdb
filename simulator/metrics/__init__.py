"""Metrics: figures derived from engine results (bandwidth, latency percentiles, energy)."""
