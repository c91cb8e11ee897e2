"""Stage 7: what a run says: tables, figures, slides, the upstream-first
ranking, reliability, and the report directory."""
