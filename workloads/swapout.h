/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fill mode's swap-out rate: /proc/vmstat's pswpout sampled by the parent
 * while the tasks fill, so that a run reports pages written to swap per
 * second over the steady part of the fill, as the seeds read vmstat's
 * "so" column, and not the fill's write rate (which includes the part
 * before any swapping starts).
 */
#ifndef SWAPBENCH_SWAPOUT_H
#define SWAPBENCH_SWAPOUT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define SO_INTERVAL_MS	20
#define SO_MAX_SAMPLES	32768	/* 11 min at 20 ms */

struct sb_config;
struct sb_shared;

struct swapout_trace {
	const struct sb_config *cfg;
	const struct sb_shared *sh;
	pthread_t thread;
	bool running;
	int stop;			/* the parent: children reaped */
	int err;			/* errno of a failed /proc/vmstat read */
	bool truncated;			/* SO_MAX_SAMPLES reached */
	bool rt;			/* sampled at SCHED_FIFO */
	unsigned int n;
	uint64_t t_ns[SO_MAX_SAMPLES];	/* CLOCK_MONOTONIC */
	uint64_t pswpout[SO_MAX_SAMPLES];
};

/*
 * The steady part: from the time the fill's swap-out crossed 10 % of its
 * pages to the time it crossed 90 %, interpolated between samples.
 */
struct swapout_steady {
	bool valid;		/* enough samples inside the window */
	uint64_t pages;		/* pswpout from the fill's start to its end */
	double start_s;		/* fill start to the first page out */
	double steady_s;	/* the window's length */
	double pages_per_s;	/* over the window */
	unsigned int window_samples;
};

/* start sampling (after the children are forked: the thread never forks) */
void swapout_start(struct swapout_trace *tr, const struct sb_config *cfg,
		   const struct sb_shared *sh);
/* stop and join; a no-op if it never started */
void swapout_stop(struct swapout_trace *tr);
/* the steady rate over [@t0, @t1] ns, the fill's start and end */
void swapout_steady(const struct swapout_trace *tr, uint64_t t0, uint64_t t1,
		    struct swapout_steady *out);

#endif
