"""Traces and logs from real systems, read into plain records (nccl-tests output, ...)."""
