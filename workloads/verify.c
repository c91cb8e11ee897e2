// SPDX-License-Identifier: GPL-2.0
/*
 * Page stamp keys and mismatch reporting.
 */
#include <inttypes.h>
#include <stdio.h>

#include "verify.h"

void stamp_key_init(struct stamp_key *k, uint64_t seed)
{
	uint64_t st = seed ^ 0x5eedc0de5eedc0deULL;

	k->mask = splitmix64(&st);
	k->key = splitmix64(&st);
}

void mismatch_print(const struct stamp_key *k, unsigned int task,
		    const struct mismatch *m)
{
	uint64_t page = 0, pass = 0;

	if (!m->offset)
		stamp_decode(k, m->found, &page, &pass);
	fprintf(stderr,
		"swapbench: MISMATCH task %u page %" PRIu64 " addr 0x%" PRIx64
		" offset %" PRIu64 " pass %" PRIu64 ": expected 0x%016" PRIx64
		" found 0x%016" PRIx64, task, m->page, m->addr, m->offset,
		m->pass, m->expected, m->found);
	if (!m->offset)
		fprintf(stderr, " (decodes as page %" PRIu64 " pass %" PRIu64
			" mod 65536)", page, pass);
	fputc('\n', stderr);
}
