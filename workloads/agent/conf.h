/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cell configuration: /etc/swaplab/cell.conf, one "key=value" per
 * line, '#' comments, keys may repeat (lists keep their order):
 *
 *   cell=NAME                 the cell's id, echoed in the result
 *   mode=run|probe            probe: print a marker and power off
 *   device=/dev/nvme0n1       swap device (absent: no swap)
 *   swap_kib=N                use at most N KiB of the device
 *   device_wait_s=N           wait up to N s for the device node
 *   swap_file=fragmented|contiguous  swap on a file in a file system on
 *                             the device (swapfile.h), not on the device
 *   pmem_fsdax=0|1            make a raw pmem namespace fsdax first
 *   zram_comp=lzo-rle         the device is zram: set its compressor and
 *                             its size (swap_kib) before mkswap
 *   sysfs.PATH=VALUE          write VALUE to /sys/PATH
 *   sysctl.NAME=VALUE         write VALUE to /proc/sys/NAME (dots -> /)
 *   arg=WORD                  the workload's argv, in order
 *   env=NAME=VALUE            extra environment for the workload
 *   timeout_s=N               kill the workload after N s
 *   interactive=0|1           workload writes to the console, no capture
 *   trace=0|1                 function_graph durations of trace_func
 *   trace_func=do_swap_page
 *   trace_buffer_kb=N         per-CPU ring buffer size
 *   result_port=org.swaplab.result
 *   test=corrupt-frame|no-frame|agent-fail   test switches
 */
#ifndef AGENT_CONF_H
#define AGENT_CONF_H

#include <stdbool.h>

#define CONF_MAX_LIST 256

struct kv {
	char *key;
	char *val;
};

struct conf {
	char *cell;
	char *mode;
	char *device;
	unsigned long long swap_kib;
	int device_wait_s;
	char *swap_file;		/* NULL: swap on the device itself */
	bool pmem_fsdax;
	char *zram_comp;		/* NULL: the device is not zram */
	struct kv sysfs[CONF_MAX_LIST];
	int nsysfs;
	struct kv sysctl[CONF_MAX_LIST];
	int nsysctl;
	char *argv[CONF_MAX_LIST + 1];
	int argc;
	char *env[CONF_MAX_LIST + 1];
	int nenv;
	int timeout_s;
	bool interactive;
	bool trace;
	char *trace_func;
	int trace_buffer_kb;
	char *result_port;
	char *test;
	char *unknown[CONF_MAX_LIST];	/* keys not understood */
	int nunknown;
};

/* 0, or -errno if the file cannot be read (defaults are then set) */
int conf_load(struct conf *c, const char *path);

#endif
