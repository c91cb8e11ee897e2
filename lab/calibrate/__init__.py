"""Stage 4: host calibrations computed before a boot and passed in
(time dilation of the device models)."""
