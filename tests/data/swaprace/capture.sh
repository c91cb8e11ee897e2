#!/bin/sh
# Capture the swaprace documents tests/unit/test_race_results.py reads:
# real output of workloads/build/swaprace on the host, tiny sizes, no swap
# needed (make -C workloads first).
set -u
here=$(dirname "$0")
bin=$here/../../../workloads/build/swaprace
"$bin" -s 8M --runtime 2 --fork-sample 64 -q > "$here/host-ok.json"
echo "host-ok: exit $? (want 0)"
"$bin" -s 8M --runtime 2 --fork-sample 64 -q --corrupt-page 700 \
	> "$here/host-corrupt.json" 2> /dev/null
echo "host-corrupt: exit $? (want 3)"
