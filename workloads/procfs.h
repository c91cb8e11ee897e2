/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /proc readers: memory totals, swap in use and the smaps entries of one
 * area.
 */
#ifndef SWAPBENCH_PROCFS_H
#define SWAPBENCH_PROCFS_H

#include <stdint.h>

struct area_info {
	int64_t rss_kb;		/* -1: not found / not readable */
	int64_t swap_kb;
	int64_t anon_huge_kb;
};

/* MemTotal and SwapTotal in bytes; 0 or -errno */
int meminfo_read(uint64_t *mem_total, uint64_t *swap_total);
/* SwapTotal - SwapFree in kB: swap in use, the swap cache's included */
int meminfo_swap_used_kb(int64_t *kb);
/*
 * Sum Rss, Swap and AnonHugePages of the /proc/self/smaps entries inside
 * [start, end).  0 or -errno.
 */
int smaps_area(uint64_t start, uint64_t end, struct area_info *ai);

#endif
