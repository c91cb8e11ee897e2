"""Stage 5: the result store, metric extraction and statistics."""
