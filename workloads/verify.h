/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Page stamps.  Every written page carries one 64-bit word per 512-byte
 * sector (n = page_size / 512 words, 8 in a 4 KiB page), so that a sector
 * lost, stale or misplaced on its way through swap (a torn page) is
 * caught, not only damage at the ends of the page:
 *
 *   sector 0, offset 0 (head):          ((pass & 0xffff) << 48 | page) ^ mask
 *   sector i, 0 < i < n-1, offset 512i: base ^ i * smul
 *   sector n-1, offset page_size-8:     base ^ (n-1) * smul   (tail)
 *
 *   base = mix64(key ^ page * C1 ^ pass * C2)
 *
 * with mask, key and the odd smul derived from the run seed.  The head
 * decodes back to page and pass (to tell a misplaced page from a damaged
 * one); the other words cover the full pass number and, smul being odd,
 * differ from each other within a page, so a sector moved inside the
 * page is caught too.  The tail sits at the very end of the page.
 */
#ifndef SWAPBENCH_VERIFY_H
#define SWAPBENCH_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "pattern.h"

#define STAMP_PAGE_MASK ((1ULL << 48) - 1)
#define STAMP_SECTOR 512
#define STAMP_SECTOR_WORDS (STAMP_SECTOR / 8)

struct stamp_key {
	uint64_t mask;
	uint64_t key;
	uint64_t smul;		/* odd: the sector words differ */
	uint64_t tail;		/* the tail word: words into the page */
	unsigned int nsec;	/* stamp words per page, >= 2 */
};

struct mismatch {
	uint64_t addr;		/* address of the (first) bad word */
	uint64_t page;		/* page index in the area */
	uint64_t offset;	/* byte offset of the word in the page */
	uint64_t pass;		/* pass that read it back */
	uint64_t expected;
	uint64_t found;
	unsigned int nbad;	/* bad stamp words of the page (stderr) */
};

void stamp_key_init(struct stamp_key *k, uint64_t seed, uint64_t page_size);

static inline uint64_t stamp_head(const struct stamp_key *k, uint64_t page,
				  uint64_t pass)
{
	return (((pass & 0xffff) << 48) | (page & STAMP_PAGE_MASK)) ^ k->mask;
}

/* the base of the sector words 1..n-1 */
static inline uint64_t stamp_base(const struct stamp_key *k, uint64_t page,
				  uint64_t pass)
{
	return mix64(k->key ^ (page * 0x9e3779b97f4a7c15ULL) ^
		     (pass * 0xd6e8feb86659fd93ULL));
}

/* sector @i's word in the page, in 64-bit words */
static inline uint64_t stamp_word(const struct stamp_key *k, unsigned int i)
{
	return i + 1 < k->nsec ? (uint64_t)i * STAMP_SECTOR_WORDS : k->tail;
}

/* the stamp of sector @i > 0 of a page with base @base */
static inline uint64_t stamp_sector(const struct stamp_key *k, uint64_t base,
				    unsigned int i)
{
	return base ^ (i * k->smul);
}

/* write the sector words 1..n-1 of page @p */
static inline void stamp_write(const struct stamp_key *k, uint64_t *p,
			       uint64_t base)
{
	volatile uint64_t *w = p;
	uint64_t s = 0;
	unsigned int i;

	for (i = 1; i + 1 < k->nsec; i++) {
		s += k->smul;
		w[i * STAMP_SECTOR_WORDS] = base ^ s;
	}
	w[k->tail] = base ^ (s + k->smul);
}

/*
 * Fill words 1..@words of every sector of page @p with noise drawn from
 * @base (the stamps are word 0 of each sector and the page's last word,
 * so @words < STAMP_SECTOR_WORDS - 1).  The noise is not checked: it
 * only makes the page as hard to compress as the words it covers.
 */
static inline void page_fill(const struct stamp_key *k, uint64_t *p,
			     uint64_t base, unsigned int words)
{
	unsigned int i, j;

	for (i = 0; i < k->nsec; i++)
		for (j = 1; j <= words; j++)
			p[i * STAMP_SECTOR_WORDS + j] = splitmix64(&base);
}

/*
 * Replace the sector words 1..n-1 of page @p (base @ob) by those of base
 * @nb.  Returns how many did not hold their old stamp; the first one's
 * index and content in *@bad and *@found.
 */
static inline unsigned int stamp_swap(const struct stamp_key *k, uint64_t *p,
				      uint64_t ob, uint64_t nb,
				      unsigned int *bad, uint64_t *found)
{
	volatile uint64_t *w = p;
	unsigned int i, n = 0;
	uint64_t s = 0;

	for (i = 1; i < k->nsec; i++) {
		uint64_t off = stamp_word(k, i), x;

		s += k->smul;
		x = w[off];
		w[off] = nb ^ s;
		if (__builtin_expect(x != (ob ^ s), 0)) {
			if (!n++) {
				*bad = i;
				*found = x;
			}
		}
	}
	return n;
}

/*
 * Check the sector words 1..n-1 of page @p against base @base (all zero
 * if @zero: a page never written).  As stamp_swap().
 */
static inline unsigned int stamp_check(const struct stamp_key *k,
				       const uint64_t *p, uint64_t base,
				       bool zero, unsigned int *bad,
				       uint64_t *found)
{
	const volatile uint64_t *w = p;
	unsigned int i, n = 0;
	uint64_t s = 0;

	for (i = 1; i < k->nsec; i++) {
		uint64_t x = w[stamp_word(k, i)];

		s += k->smul;
		if (__builtin_expect(x != (zero ? 0 : base ^ s), 0)) {
			if (!n++) {
				*bad = i;
				*found = x;
			}
		}
	}
	return n;
}

/* decode a head word: page and pass (pass modulo 65536) */
static inline void stamp_decode(const struct stamp_key *k, uint64_t head,
				uint64_t *page, uint64_t *pass)
{
	head ^= k->mask;
	*page = head & STAMP_PAGE_MASK;
	*pass = head >> 48;
}

/*
 * Print one mismatch to stderr as soon as it is found (@fork: by the
 * --fork-share verifier).
 */
void mismatch_print(const struct stamp_key *k, unsigned int task,
		    const struct mismatch *m, bool fork);

#endif
