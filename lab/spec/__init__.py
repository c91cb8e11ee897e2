"""Stage 1: matrix.yaml as a validated, immutable model (model.py:
variants, backends, workloads, sub-matrices, expectations, questions),
parsed by matrix.py, questions.py and expect.py with file:line in every
error."""
