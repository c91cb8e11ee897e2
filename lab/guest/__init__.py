"""Stage 3: one guest: initramfs with the workloads, swap backend and
device model, QEMU, and the runner that boots a cell and reads its frame."""
