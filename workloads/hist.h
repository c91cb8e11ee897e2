/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Log-linear latency histogram.
 *
 * Values are nanoseconds.  Values below HIST_LINEAR are counted exactly;
 * above that every power of two is split into HIST_SUB linear buckets, so
 * a bucket is at most 1/HIST_SUB of its lower bound wide and reporting the
 * bucket midpoint is off by at most 1/(2 * HIST_SUB) = 0.39 %.  Values
 * above HIST_MAX_NS (10 s) are counted in the last bucket; min, max, sum
 * and count are kept exactly.  Histograms merge by adding the buckets.
 */
#ifndef SWAPBENCH_HIST_H
#define SWAPBENCH_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS	7
#define HIST_SUB	(1u << HIST_SUB_BITS)		/* 128 */
#define HIST_LINEAR	(2u * HIST_SUB)			/* 256 ns */
#define HIST_MIN_NS	50ULL				/* documented range */
#define HIST_MAX_NS	10000000000ULL			/* 10 s */
/* index of HIST_MAX_NS (2^33 <= 1e10 < 2^34) plus one */
#define HIST_NBUCKETS	(HIST_LINEAR + (33 - HIST_SUB_BITS - 1) * HIST_SUB + \
			 (unsigned int)(HIST_MAX_NS >> (33 - HIST_SUB_BITS)) - \
			 HIST_SUB + 1)

struct hist {
	uint64_t count;
	uint64_t sum;		/* ns */
	uint64_t min;		/* ns, UINT64_MAX when empty */
	uint64_t max;		/* ns */
	uint64_t bucket[HIST_NBUCKETS];
};

#define HIST_NPCT 8
extern const double hist_pct[HIST_NPCT];	/* 50 60 70 80 90 95 99 99.9 */
extern const char *const hist_pct_name[HIST_NPCT];	/* "p50" .. "p999" */

static inline unsigned int hist_index(uint64_t v)
{
	unsigned int e;

	if (v < HIST_LINEAR)
		return (unsigned int)v;
	if (v > HIST_MAX_NS)
		v = HIST_MAX_NS;
	e = 63 - (unsigned int)__builtin_clzll(v);
	return HIST_LINEAR + (e - HIST_SUB_BITS - 1) * HIST_SUB +
	       (unsigned int)(v >> (e - HIST_SUB_BITS)) - HIST_SUB;
}

static inline void hist_add(struct hist *h, uint64_t v)
{
	h->bucket[hist_index(v)]++;
	h->count++;
	h->sum += v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

void hist_init(struct hist *h);
void hist_merge(struct hist *dst, const struct hist *src);
/* lowest value and width (in ns) of bucket @idx */
void hist_bucket_range(unsigned int idx, uint64_t *lo, uint64_t *width);
/* nearest-rank percentile @p (0 < p <= 100) in ns; 0 when empty */
double hist_percentile(const struct hist *h, double p);
double hist_mean(const struct hist *h);
int hist_equal(const struct hist *a, const struct hist *b);
/* --selftest-hist: values on stdin, "--" starts a new histogram */
int hist_selftest(void);

#endif
