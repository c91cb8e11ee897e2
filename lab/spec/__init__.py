"""Stage 1: matrix.yaml as a validated model (variants, backends, workloads,
sub-matrices, expectations), with file:line in every error."""
