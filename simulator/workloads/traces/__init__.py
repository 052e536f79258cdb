"""Traces and logs from other tools: MLCommons Chakra execution traces turned into transfer DAGs, nccl-tests
output read into plain records."""
