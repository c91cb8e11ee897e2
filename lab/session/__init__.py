"""Stage 6: a sub-matrix as a pytest session: the plugin that plans and
stores cells, and the per-cell execution (build, boot, provenance)."""
