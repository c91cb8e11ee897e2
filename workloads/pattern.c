// SPDX-License-Identifier: GPL-2.0
/*
 * Access patterns and the seeded permutation.
 */
#include <string.h>

#include "pattern.h"

static const char *const pattern_names[] = {
	[PAT_SEQ] = "seq",
	[PAT_SEQ_BACK] = "seq-back",
	[PAT_RANDOM] = "random",
};

int pattern_parse(const char *s, enum pattern *p)
{
	unsigned int i;

	for (i = 0; i < sizeof(pattern_names) / sizeof(pattern_names[0]); i++) {
		if (!strcmp(s, pattern_names[i])) {
			*p = (enum pattern)i;
			return 0;
		}
	}
	if (!strcmp(s, "rand")) {
		*p = PAT_RANDOM;
		return 0;
	}
	return -1;
}

const char *pattern_name(enum pattern p)
{
	return pattern_names[p];
}

void order_init(struct order *o, enum pattern pat, uint64_t npages,
		uint64_t step, uint64_t seed, uint64_t task, uint64_t pass)
{
	uint64_t st;
	unsigned int bits = 1, r;

	memset(o, 0, sizeof(*o));
	o->pat = pat;
	o->step = step ? step : 1;
	o->n = (npages + o->step - 1) / o->step;
	if (pat != PAT_RANDOM)
		return;
	while (bits < 64 && (1ULL << bits) < o->n)
		bits++;
	o->mask = bits == 64 ? ~0ULL : (1ULL << bits) - 1;
	o->shift = bits / 2 + 1;
	st = mix64(seed) ^ mix64(task + 0x51ed27ULL) ^
	     (pass * 0x2545f4914f6cdd1dULL);
	for (r = 0; r < PERM_ROUNDS; r++) {
		o->key[r] = splitmix64(&st) & o->mask;
		o->mul[r] = splitmix64(&st) | 1;
	}
}
