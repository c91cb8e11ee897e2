/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The swap device: wait for it, write a fresh swap header (mkswap), swapon,
 * and report what the kernel saw.
 */
#ifndef AGENT_SWAPDEV_H
#define AGENT_SWAPDEV_H

#include <stdbool.h>

#include "jw.h"

/*
 * Prepare and enable swap on @dev, limited to @max_kib (0: whole device);
 * @fsdax: first turn a raw pmem namespace into fsdax; @swap_file (NULL:
 * none), "fragmented" or "contiguous": swap on a file on @dev instead.
 * Writes the "device" object into @w; returns 0 or a negative errno, with
 * a message in @err.
 */
int swapdev_setup(struct jw *w, const char *dev, unsigned long long max_kib,
		  int wait_s, bool fsdax, const char *swap_file, char *err,
		  size_t errsize);

/* the whole kernel log (klogctl READ_ALL) appended to @b; 0 or -errno */
int klog_read(struct buf *b);

#endif
