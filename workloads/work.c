// SPDX-License-Identifier: GPL-2.0
/*
 * Per-page CPU work and the calibration of the instruction loop.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jw.h"
#include "swapbench.h"
#include "work.h"

#define CAL_MAGIC	"swapbench-calibration"
#define CAL_TRIAL_ITERS	2000000ULL	/* a few ms per trial */
#define CAL_TRIALS	15
#define CAL_CHECKS	2000

/* keeps the compiler from folding the loop away */
volatile uint64_t work_sink = 0x2545f4914f6cdd1dULL;

__attribute__((noinline)) void work_loop(uint64_t iters)
{
	uint64_t x = work_sink;
	uint64_t i;

	for (i = 0; i < iters; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		x ^= x >> 29;
		__asm__ volatile("" : "+r"(x));
	}
	work_sink = x;
}

int calibration_read(const char *path, struct calibration *c)
{
	char line[256], key[64];
	FILE *f = fopen(path, "r");
	int have_magic = 0;

	memset(c, 0, sizeof(*c));
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char val[128];

		if (line[0] == '#')
			continue;
		if (!strncmp(line, CAL_MAGIC, strlen(CAL_MAGIC))) {
			have_magic = 1;
			continue;
		}
		if (sscanf(line, "%63s %127s", key, val) != 2)
			continue;
		if (!strcmp(key, "work_ns"))
			c->work_ns = strtoull(val, NULL, 10);
		else if (!strcmp(key, "iterations"))
			c->iters = strtoull(val, NULL, 10);
		else if (!strcmp(key, "ns_per_iteration"))
			c->ns_per_iter = strtod(val, NULL);
	}
	fclose(f);
	if (!have_magic || !c->work_ns || !c->iters)
		return -EINVAL;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int calibrate(const char *path, uint64_t work_ns)
{
	uint64_t best = UINT64_MAX, iters, t, sum = 0;
	uint64_t *d;
	double ns_per_iter;
	struct jw w;
	FILE *f;
	int i;

	work_loop(CAL_TRIAL_ITERS);	/* warm up: caches, frequency */
	/* the fastest trial is the one least disturbed by other load */
	for (i = 0; i < CAL_TRIALS; i++) {
		t = now_ns();
		work_loop(CAL_TRIAL_ITERS);
		t = now_ns() - t;
		if (t < best)
			best = t;
	}
	ns_per_iter = (double)best / (double)CAL_TRIAL_ITERS;
	iters = (uint64_t)((double)work_ns / ns_per_iter + 0.5);
	if (!iters)
		iters = 1;

	/* check: time the calibrated loop itself */
	d = calloc(CAL_CHECKS, sizeof(*d));
	if (!d) {
		perror("swapbench: calloc");
		return 1;
	}
	for (i = 0; i < CAL_CHECKS; i++) {
		t = now_ns();
		work_loop(iters);
		d[i] = now_ns() - t;
		sum += d[i];
	}
	qsort(d, CAL_CHECKS, sizeof(*d), cmp_u64);

	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "swapbench: %s: %s\n", path, strerror(errno));
		free(d);
		return 1;
	}
	fprintf(f, "%s\n# instruction loop calibrated on the host\n"
		"work_ns %" PRIu64 "\niterations %" PRIu64
		"\nns_per_iteration %.6f\n", CAL_MAGIC, work_ns, iters,
		ns_per_iter);
	if (fclose(f)) {
		fprintf(stderr, "swapbench: %s: %s\n", path, strerror(errno));
		free(d);
		return 1;
	}

	jw_init(&w, stdout);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "schema", SB_SCHEMA);
	jw_str(&w, "mode", "calibrate");
	jw_str(&w, "status", "ok");
	jw_obj_begin(&w, "calibration");
	jw_str(&w, "file", path);
	jw_dbl(&w, "work_us", (double)work_ns / 1e3, 3);
	jw_u64(&w, "iterations", iters);
	jw_dbl(&w, "ns_per_iteration", ns_per_iter, 6);
	jw_u64(&w, "check_runs", CAL_CHECKS);
	jw_dbl(&w, "check_min_us", (double)d[0] / 1e3, 3);
	jw_dbl(&w, "check_median_us", (double)d[CAL_CHECKS / 2] / 1e3, 3);
	jw_dbl(&w, "check_mean_us", (double)sum / CAL_CHECKS / 1e3, 3);
	jw_dbl(&w, "check_p90_us", (double)d[CAL_CHECKS * 9 / 10] / 1e3, 3);
	jw_dbl(&w, "check_max_us", (double)d[CAL_CHECKS - 1] / 1e3, 3);
	jw_obj_end(&w);
	jw_obj_end(&w);
	jw_finish(&w);
	fprintf(stderr, "swapbench: calibrated %" PRIu64 " iterations = %.3f us"
		" (%.4f ns/iteration), check median %.3f us, written to %s\n",
		iters, (double)work_ns / 1e3, ns_per_iter,
		(double)d[CAL_CHECKS / 2] / 1e3, path);
	free(d);
	return 0;
}
