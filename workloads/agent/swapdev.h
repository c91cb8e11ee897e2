/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The swap device: wait for it, write a fresh swap header (mkswap), swapon,
 * and report what the kernel saw.
 */
#ifndef AGENT_SWAPDEV_H
#define AGENT_SWAPDEV_H

#include <stdbool.h>

#include "conf.h"
#include "jw.h"

/*
 * Prepare and enable swap on @c->device, limited to @c->swap_kib (0: the
 * whole device): a zram device (@c->zram_comp) gets its compressor and
 * that size first; a raw pmem namespace (@c->pmem_fsdax) becomes fsdax;
 * with @c->swap_file ("fragmented" or "contiguous") the swap area is a
 * file on the device. Writes the "device" object into @w; returns 0 or a
 * negative errno, with a message in @err.
 */
int swapdev_setup(struct jw *w, const struct conf *c, char *err,
		  size_t errsize);

/*
 * zram's memory use at its fullest: mm_stat sampled while the workload
 * runs (its pages leave zram when it exits), the sample that held the
 * most data kept.
 */
struct zram_peak {
	unsigned long long orig_bytes;	/* stored, same-filled pages aside */
	unsigned long long compr_bytes;
	unsigned long long used_bytes;	/* with the allocator's overhead */
	unsigned long long same_pages;	/* same-filled: no memory at all */
	unsigned long long huge_pages;	/* stored uncompressed */
	unsigned long long max_used_bytes;
	int samples;
};

void zram_sample(struct zram_peak *peak, const char *dev);
void zram_report(struct jw *w, const struct zram_peak *peak);

/* the whole kernel log (klogctl READ_ALL) appended to @b; 0 or -errno */
int klog_read(struct buf *b);

#endif
