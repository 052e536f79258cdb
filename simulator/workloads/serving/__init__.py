"""Serving (issue 25): requests and trace readers (:mod:`.requests`), the paged KV block allocator
(:mod:`.kv_blocks`), vLLM V1-style continuous batching over iterations costed by an injected function
(:mod:`.scheduler`), and what a run delivered (:mod:`.metrics`). A library layer: no command yet."""
