// SPDX-License-Identifier: GPL-2.0
/*
 * Fill mode's swap-out rate sampler (see swapout.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "swapbench.h"
#include "swapout.h"
#include "work.h"

/* at least this many samples inside the 10-90 % window to call it steady */
#define SO_MIN_WINDOW	5

/*
 * /proc/vmstat read with read(2) into a stack buffer: no stdio, so the
 * sampler takes no lock a child could inherit (children are forked
 * before it starts, but keep it that way).  0 or -errno.
 */
static int read_pswpout(uint64_t *val)
{
	static const char key[] = "\npswpout ";
	char buf[16384];
	ssize_t len = 0;
	const char *p;
	int fd = open("/proc/vmstat", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((size_t)len < sizeof(buf) - 1) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - 1 - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += r;
	}
	close(fd);
	buf[len] = '\0';
	p = strstr(buf, key);
	if (!p)
		return -ENOENT;
	*val = strtoull(p + sizeof(key) - 1, NULL, 10);
	return 0;
}

/* every task is past the fill (barrier 1), or the run was aborted */
static bool fill_over(const struct swapout_trace *tr)
{
	return barrier_done(tr->cfg, tr->sh, 1) ||
	       __atomic_load_n(&tr->sh->abort, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&tr->stop, __ATOMIC_ACQUIRE);
}

static void *sampler(void *arg)
{
	struct swapout_trace *tr = arg;
	struct timespec ts = { 0, SO_INTERVAL_MS * 1000000L };
	struct sched_param rt = { .sched_priority = 1 };
	bool last = false;

	/*
	 * The fill keeps every CPU busy: at normal priority a wake-up waits
	 * for the scheduler, and under TCG a 1.5 s fill got 10 reads in
	 * place of 30.  Real-time, the reads come on time: one read of
	 * /proc/vmstat per interval.  Not fatal when refused (not root):
	 * the timestamps are the reads' own.
	 */
	tr->rt = !pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt);

	while (!last) {
		uint64_t v;
		int err;

		/*
		 * One sample after the fill is over closes the trace.  The
		 * first is never the last: a short fill may end before this
		 * thread first runs, and a rate needs two samples.
		 */
		last = tr->n && fill_over(tr);
		err = read_pswpout(&v);
		if (err) {
			tr->err = -err;
			break;
		}
		if (tr->n == SO_MAX_SAMPLES) {
			tr->truncated = true;
			break;
		}
		tr->t_ns[tr->n] = now_ns();
		tr->pswpout[tr->n] = v;
		tr->n++;
		if (!last)
			nanosleep(&ts, NULL);
	}
	return NULL;
}

void swapout_start(struct swapout_trace *tr, const struct sb_config *cfg,
		   const struct sb_shared *sh)
{
	tr->cfg = cfg;
	tr->sh = sh;
	tr->n = 0;
	tr->err = 0;
	tr->stop = 0;
	tr->truncated = false;
	tr->running = !pthread_create(&tr->thread, NULL, sampler, tr);
	if (!tr->running)
		tr->err = EAGAIN;
}

void swapout_stop(struct swapout_trace *tr)
{
	if (!tr->running)
		return;
	__atomic_store_n(&tr->stop, 1, __ATOMIC_RELEASE);
	pthread_join(tr->thread, NULL);
	tr->running = false;
}

/* pswpout at time @t, linear between the samples around it */
static double count_at(const struct swapout_trace *tr, uint64_t t)
{
	unsigned int i;

	if (t <= tr->t_ns[0])
		return (double)tr->pswpout[0];
	for (i = 1; i < tr->n; i++) {
		if (tr->t_ns[i] >= t) {
			double f = (double)(t - tr->t_ns[i - 1]) /
				   (double)(tr->t_ns[i] - tr->t_ns[i - 1]);

			return tr->pswpout[i - 1] +
			       f * (double)(tr->pswpout[i] -
					    tr->pswpout[i - 1]);
		}
	}
	return (double)tr->pswpout[tr->n - 1];
}

/* the time pswpout reached @target (interpolated), at most @t1 */
static uint64_t time_of(const struct swapout_trace *tr, double target,
			uint64_t t1)
{
	unsigned int i;

	for (i = 1; i < tr->n && tr->t_ns[i - 1] < t1; i++) {
		double a = (double)tr->pswpout[i - 1];
		double b = (double)tr->pswpout[i];

		if (b >= target && b > a)
			return tr->t_ns[i - 1] + (uint64_t)((target - a) /
				(b - a) * (double)(tr->t_ns[i] -
						   tr->t_ns[i - 1]));
	}
	return t1;
}

void swapout_steady(const struct swapout_trace *tr, uint64_t t0, uint64_t t1,
		    struct swapout_steady *out)
{
	double c0, total, lo, hi;
	uint64_t t_first, t10, t90;
	unsigned int i;

	memset(out, 0, sizeof(*out));
	if (tr->n < 2 || t1 <= t0)
		return;
	c0 = count_at(tr, t0);
	total = count_at(tr, t1) - c0;
	if (total < 1)
		return;
	out->pages = (uint64_t)(total + 0.5);
	t_first = time_of(tr, c0 + 0.5, t1);
	out->start_s = t_first > t0 ? (double)(t_first - t0) / 1e9 : 0;
	lo = c0 + 0.1 * total;
	hi = c0 + 0.9 * total;
	t10 = time_of(tr, lo, t1);
	t90 = time_of(tr, hi, t1);
	if (t90 <= t10)
		return;
	for (i = 0; i < tr->n; i++)
		out->window_samples += tr->t_ns[i] >= t10 &&
				       tr->t_ns[i] <= t90;
	out->steady_s = (double)(t90 - t10) / 1e9;
	out->pages_per_s = (hi - lo) / out->steady_s;
	out->valid = out->window_samples >= SO_MIN_WINDOW;
}
