"""Stage 5: the result store, metric extraction, statistics, and the
answers to a run's questions (verdicts, pieces, replication)."""
