/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Swap on a file (backends with swap_file): an ext2-format file system,
 * mounted by the ext4 driver, on the swap drive; the swap file written
 * into it, its blocks interleaved with filler files when fragmented; and
 * after the run a check that every filler file still holds its own data.
 * A kernel that takes a swap file's slots for contiguous sectors (a 2 MiB
 * IO from the first slot's sector) reads the wrong data and writes over
 * the filler files.
 */
#ifndef AGENT_SWAPFILE_H
#define AGENT_SWAPFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "jw.h"

#define SWAPFILE_DIR	"/run/swapfs"
#define SWAPFILE_PATH	SWAPFILE_DIR "/swapfile"

/*
 * Make the file system on @dev, the filler files when @fragmented, and a
 * swap file of at most @max_kib (0: what fits); its path in @path.
 * Writes the "swap_file" object into @w; 0 or a negative errno, with a
 * message in @err.
 */
int swapfile_make(struct jw *w, const char *dev, unsigned long long max_kib,
		  bool fragmented, char *err, size_t errsize);

/*
 * Re-read every filler file from the drive (page cache dropped) and
 * compare it with what was written: the "swap_file_check" object.
 */
void swapfile_check(struct jw *w);

#endif
