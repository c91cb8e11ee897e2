/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Memory pressure on demand: write fresh anonymous memory a page at a
 * time, then free it.  Under it other pages go out to swap (and written
 * ones leave the swap cache); once it is freed, RAM has room again.
 */
#ifndef SWAPLAB_PUSH_H
#define SWAPLAB_PUSH_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Push @bytes through RAM.  @stop, if not NULL, is asked every MiB with
 * @arg and ends the push early when true (it takes seconds).  0, EINTR
 * when stopped, or the errno of a failed mmap.
 */
int push_memory(uint64_t bytes, bool (*stop)(const void *arg),
		const void *arg);

#endif
