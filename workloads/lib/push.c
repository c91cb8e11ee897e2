// SPDX-License-Identifier: GPL-2.0
/*
 * Memory pressure on demand (see push.h).
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "push.h"

int push_memory(uint64_t bytes, bool (*stop)(const void *arg),
		const void *arg)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), off;
	int ret = 0;
	char *p;

	if (!bytes)
		return 0;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return errno;
	for (off = 0; off < bytes; off += page) {
		if (stop && !(off & ((1 << 20) - 1)) && stop(arg)) {
			ret = EINTR;
			break;
		}
		p[off] = 1;
	}
	munmap(p, bytes);
	return ret;
}
