"""swaplab: build kernel variants, boot them in QEMU, measure swap.

The package follows the lab's one direction of flow:
matrix.yaml -> matrix (validated model) -> tree + patches + kconfig ->
build -> (guest, runner, results, statistics, report: later steps).
"""
