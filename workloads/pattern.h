/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Page access order: sequential, sequential backward, or a seeded random
 * permutation.  The random order needs no memory: a keyed bijection on
 * [0, 2^k) (xor key, multiply by an odd constant, xorshift; four rounds)
 * is walked in counter order and values >= n are skipped ("cycle
 * walking"), which yields every visited page exactly once.  Each pass
 * gets its own keys, derived from (seed, task, pass) with splitmix64, so
 * the order changes from pass to pass but is reproducible.
 */
#ifndef SWAPBENCH_PATTERN_H
#define SWAPBENCH_PATTERN_H

#include <stdbool.h>
#include <stdint.h>

enum pattern {
	PAT_SEQ,
	PAT_SEQ_BACK,
	PAT_RANDOM,
};

#define PERM_ROUNDS 4

struct order {
	enum pattern pat;
	uint64_t n;		/* visited pages: ceil(npages / step) */
	uint64_t step;		/* in pages */
	uint64_t pos;		/* next position, 0..n */
	uint64_t ctr;		/* random: next counter value, 0..mask */
	uint64_t mask;		/* random: 2^k - 1 >= n - 1 */
	unsigned int shift;
	uint64_t key[PERM_ROUNDS];
	uint64_t mul[PERM_ROUNDS];
};

static inline uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t mix64(uint64_t x)
{
	return splitmix64(&x);
}

int pattern_parse(const char *s, enum pattern *p);
const char *pattern_name(enum pattern p);

/* prepare the order of pass @pass of task @task over @npages pages */
void order_init(struct order *o, enum pattern pat, uint64_t npages,
		uint64_t step, uint64_t seed, uint64_t task, uint64_t pass);

static inline uint64_t order_perm(const struct order *o, uint64_t x)
{
	unsigned int r;

	for (r = 0; r < PERM_ROUNDS; r++) {
		x = ((x ^ o->key[r]) * o->mul[r]) & o->mask;
		x ^= x >> o->shift;
	}
	return x;
}

/* next page index (0-based, in pages); false at the end of the pass */
static inline bool order_next(struct order *o, uint64_t *page)
{
	uint64_t i;

	if (o->pos >= o->n)
		return false;
	switch (o->pat) {
	case PAT_SEQ:
		i = o->pos;
		break;
	case PAT_SEQ_BACK:
		i = o->n - 1 - o->pos;
		break;
	default:
		do {
			i = order_perm(o, o->ctr++);
		} while (i >= o->n);
		break;
	}
	o->pos++;
	*page = i * o->step;
	return true;
}

#endif
