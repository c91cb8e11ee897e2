// SPDX-License-Identifier: GPL-2.0
/*
 * Page stamp keys and mismatch reporting.
 */
#include <inttypes.h>
#include <stdio.h>

#include "verify.h"

void stamp_key_init(struct stamp_key *k, uint64_t seed, uint64_t page_size)
{
	uint64_t st = seed ^ 0x5eedc0de5eedc0deULL;

	k->mask = splitmix64(&st);
	k->key = splitmix64(&st);
	k->smul = splitmix64(&st) | 1;
	k->nsec = page_size / STAMP_SECTOR;
	if (k->nsec < 2)
		k->nsec = 2;	/* head and tail at the least */
	k->tail = page_size / 8 - 1;
}

void mismatch_print(const struct stamp_key *k, unsigned int task,
		    const struct mismatch *m, bool fork)
{
	uint64_t page = 0, pass = 0;

	if (!m->offset)
		stamp_decode(k, m->found, &page, &pass);
	fprintf(stderr,
		"swapbench: MISMATCH%s task %u page %" PRIu64 " addr 0x%"
		PRIx64 " offset %" PRIu64 " pass %" PRIu64 ": expected 0x%016"
		PRIx64 " found 0x%016" PRIx64, fork ? " (fork-share child)" : "",
		task, m->page, m->addr, m->offset, m->pass, m->expected,
		m->found);
	if (!m->offset)
		fprintf(stderr, " (decodes as page %" PRIu64 " pass %" PRIu64
			" mod 65536)", page, pass);
	fprintf(stderr, "; %u of %u stamp words of the page bad\n", m->nbad,
		k->nsec);
}
