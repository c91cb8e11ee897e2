"""swaplab: build kernel variants, boot them in QEMU, measure swap.

The sub-packages follow the lab's one direction of flow; each imports
only from the ones before it (and from the shared helpers errors, cache,
paths, procs and progress):

    spec       matrix.yaml -> validated model
    kernel     tree + patches + config -> kernel build
    guest      initramfs with workloads -> QEMU with a backend -> frame
    calibrate  time dilation of the device models
    results    result store -> metrics -> statistics -> answers
    session    a sub-matrix as a pytest session, one cell per item
    report     tables, figures, slides, upstream-first ranking
"""
