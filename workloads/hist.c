// SPDX-License-Identifier: GPL-2.0
/*
 * Log-linear histogram: percentiles, merging and the stdin test mode.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "jw.h"

const double hist_pct[HIST_NPCT] = { 50, 60, 70, 80, 90, 95, 99, 99.9 };
const char *const hist_pct_name[HIST_NPCT] = {
	"p50", "p60", "p70", "p80", "p90", "p95", "p99", "p999",
};

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	unsigned int i;

	for (i = 0; i < HIST_NBUCKETS; i++)
		dst->bucket[i] += src->bucket[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

void hist_bucket_range(unsigned int idx, uint64_t *lo, uint64_t *width)
{
	unsigned int j, e;

	if (idx < HIST_LINEAR) {
		*lo = idx;
		*width = 1;
		return;
	}
	j = idx - HIST_LINEAR;
	e = HIST_SUB_BITS + 1 + j / HIST_SUB;
	*width = 1ULL << (e - HIST_SUB_BITS);
	*lo = (uint64_t)(HIST_SUB + j % HIST_SUB) << (e - HIST_SUB_BITS);
}

double hist_percentile(const struct hist *h, double p)
{
	uint64_t rank, seen = 0, lo, width;
	unsigned int i;
	double v;

	if (!h->count)
		return 0;
	/* nearest rank: the smallest value with at least p % at or below */
	rank = (uint64_t)ceil(p * (double)h->count / 100.0 - 1e-9);
	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	for (i = 0; i < HIST_NBUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank)
			break;
	}
	if (i == HIST_NBUCKETS)
		return (double)h->max;
	hist_bucket_range(i, &lo, &width);
	v = (double)lo + (double)(width - 1) / 2.0;
	if (v < (double)h->min)
		v = (double)h->min;
	if (v > (double)h->max)
		v = (double)h->max;
	return v;
}

double hist_mean(const struct hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0;
}

int hist_equal(const struct hist *a, const struct hist *b)
{
	return a->count == b->count && a->sum == b->sum &&
	       a->min == b->min && a->max == b->max &&
	       !memcmp(a->bucket, b->bucket, sizeof(a->bucket));
}

static void selftest_emit(struct jw *w, const char *key, const struct hist *h)
{
	char name[32];
	unsigned int i;

	jw_obj_begin(w, key);
	jw_u64(w, "samples", h->count);
	jw_u64(w, "min_ns", h->count ? h->min : 0);
	jw_u64(w, "max_ns", h->max);
	jw_dbl(w, "avg_ns", hist_mean(h), 3);
	for (i = 0; i < HIST_NPCT; i++) {
		snprintf(name, sizeof(name), "%s_ns", hist_pct_name[i]);
		jw_dbl(w, name, hist_percentile(h, hist_pct[i]), 3);
	}
	jw_obj_end(w);
}

#define SELFTEST_MAX 64

int hist_selftest(void)
{
	struct hist *h, *merged, *direct;
	unsigned int n = 1, i;
	char line[128];
	struct jw w;
	int ret = 0;

	h = calloc(SELFTEST_MAX + 2, sizeof(*h));
	if (!h) {
		perror("swapbench: calloc");
		return 1;
	}
	merged = &h[SELFTEST_MAX];
	direct = &h[SELFTEST_MAX + 1];
	for (i = 0; i < SELFTEST_MAX + 2; i++)
		hist_init(&h[i]);
	while (fgets(line, sizeof(line), stdin)) {
		char *end;
		unsigned long long v;

		if (!strncmp(line, "--", 2)) {
			if (n == SELFTEST_MAX) {
				fprintf(stderr, "swapbench: too many sets\n");
				ret = 2;
				goto out;
			}
			n++;
			continue;
		}
		v = strtoull(line, &end, 10);
		if (end == line)
			continue;	/* blank or comment line */
		hist_add(&h[n - 1], v);
		hist_add(direct, v);
	}
	for (i = 0; i < n; i++)
		hist_merge(merged, &h[i]);

	jw_init(&w, stdout);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "schema", "swapbench-hist/1");
	jw_u64(&w, "buckets", HIST_NBUCKETS);
	jw_arr_begin(&w, "hists");
	for (i = 0; i < n; i++)
		selftest_emit(&w, NULL, &h[i]);
	jw_arr_end(&w);
	selftest_emit(&w, "merged", merged);
	selftest_emit(&w, "direct", direct);
	jw_bool(&w, "merge_equal", hist_equal(merged, direct));
	jw_obj_end(&w);
	jw_finish(&w);
out:
	free(h);
	return ret;
}
