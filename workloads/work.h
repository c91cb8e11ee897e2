/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-page CPU work: a busy-wait on CLOCK_MONOTONIC, or a fixed
 * instruction loop whose iteration count was calibrated on the host.
 */
#ifndef SWAPBENCH_WORK_H
#define SWAPBENCH_WORK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* spin until @ns nanoseconds after @start (a now_ns() value) */
static inline void work_busy(uint64_t start, uint64_t ns)
{
	while (now_ns() - start < ns)
		;
}

/* @iters rounds of a dependent multiply/xorshift chain */
void work_loop(uint64_t iters);

struct calibration {
	uint64_t work_ns;	/* the time the loop was calibrated for */
	uint64_t iters;		/* iterations that take work_ns */
	double ns_per_iter;
};

int calibration_read(const char *path, struct calibration *c);
/* --calibrate: measure, write @path, print JSON on stdout */
int calibrate(const char *path, uint64_t work_ns);

#endif
