/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Page stamps.  Every written page carries two 64-bit words:
 *
 *   head (offset 0):            ((pass & 0xffff) << 48 | page) ^ mask
 *   tail (offset page_size-8):  mix64(key ^ page * C1 ^ pass * C2)
 *
 * with mask and key derived from the run seed.  The head decodes back to
 * page and pass (to tell a misplaced page from a damaged one); the tail
 * covers the full pass number.
 */
#ifndef SWAPBENCH_VERIFY_H
#define SWAPBENCH_VERIFY_H

#include <stdint.h>

#include "pattern.h"

#define STAMP_PAGE_MASK ((1ULL << 48) - 1)

struct stamp_key {
	uint64_t mask;
	uint64_t key;
};

struct mismatch {
	uint64_t addr;		/* address of the bad word */
	uint64_t page;		/* page index in the area */
	uint64_t offset;	/* byte offset of the word in the page */
	uint64_t pass;		/* pass that read it back */
	uint64_t expected;
	uint64_t found;
};

void stamp_key_init(struct stamp_key *k, uint64_t seed);

static inline uint64_t stamp_head(const struct stamp_key *k, uint64_t page,
				  uint64_t pass)
{
	return (((pass & 0xffff) << 48) | (page & STAMP_PAGE_MASK)) ^ k->mask;
}

static inline uint64_t stamp_tail(const struct stamp_key *k, uint64_t page,
				  uint64_t pass)
{
	return mix64(k->key ^ (page * 0x9e3779b97f4a7c15ULL) ^
		     (pass * 0xd6e8feb86659fd93ULL));
}

/* decode a head word: page and pass (pass modulo 65536) */
static inline void stamp_decode(const struct stamp_key *k, uint64_t head,
				uint64_t *page, uint64_t *pass)
{
	head ^= k->mask;
	*page = head & STAMP_PAGE_MASK;
	*pass = head >> 48;
}

/* print one mismatch to stderr as soon as it is found */
void mismatch_print(const struct stamp_key *k, unsigned int task,
		    const struct mismatch *m);

#endif
