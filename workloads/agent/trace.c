// SPDX-License-Identifier: GPL-2.0
/*
 * function_graph duration collection.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace.h"
#include "util.h"

#define TRACEFS		"/sys/kernel/tracing"
#define MAX_DUR		(1u << 20)
#define NBUCKETS	64

struct trace_shared {
	volatile int stop;
	uint64_t lines;
	uint64_t samples;
	uint64_t kept;
	uint64_t sum_ns;
	uint64_t min_ns;
	uint64_t max_ns;
	uint64_t hist[NBUCKETS];	/* [k]: 2^(k-1) <= ns < 2^k */
	uint32_t dur[MAX_DUR];		/* ns, the first MAX_DUR samples */
};

static int knob(const char *name, const char *val, char *err, size_t n)
{
	char path[256];
	int ret;

	snprintf(path, sizeof(path), TRACEFS "/%s", name);
	ret = write_knob(path, val);
	if (ret)
		snprintf(err, n, "%.120s <- %.40s: %.60s", path, val, strerror(-ret));
	return ret;
}

static int bucket(uint64_t ns)
{
	int k = 0;

	while (ns && k < NBUCKETS - 1) {
		ns >>= 1;
		k++;
	}
	return k;
}

/* " 1) ! 305.680 us  |  } / * do_swap_page * /" -> 305680 */
static int parse_line(const char *line, const char *func, uint64_t *ns)
{
	const char *us = strstr(line, " us ");
	const char *p;
	double v;

	if (!us || !strstr(line, func))
		return -1;
	p = us;
	while (p > line && (p[-1] == '.' || (p[-1] >= '0' && p[-1] <= '9')))
		p--;
	if (p == us)
		return -1;
	v = strtod(p, NULL);
	*ns = (uint64_t)(v * 1000.0 + 0.5);
	return 0;
}

static void account(struct trace_shared *sh, uint64_t ns)
{
	if (sh->kept < MAX_DUR)
		sh->dur[sh->kept++] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
	if (!sh->samples || ns < sh->min_ns)
		sh->min_ns = ns;
	if (ns > sh->max_ns)
		sh->max_ns = ns;
	sh->samples++;
	sh->sum_ns += ns;
	sh->hist[bucket(ns)]++;
}

static void reader(struct trace_shared *sh, const char *func)
{
	struct timespec nap = { 0, 10 * 1000 * 1000 };
	static char buf[65536];
	size_t have = 0;
	int fd, idle = 0;

	fd = open(TRACEFS "/trace_pipe", O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		_exit(1);
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *line, *nl;

		if (n <= 0) {
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				break;
			/* stopped and drained (two quiet rounds) */
			if (sh->stop && ++idle > 2)
				break;
			nanosleep(&nap, NULL);
			continue;
		}
		idle = 0;
		have += (size_t)n;
		buf[have] = '\0';
		line = buf;
		while ((nl = strchr(line, '\n'))) {
			uint64_t ns;

			*nl = '\0';
			sh->lines++;
			if (parse_line(line, func, &ns) == 0)
				account(sh, ns);
			line = nl + 1;
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0;	/* an absurdly long line: drop it */
	}
	_exit(0);
}

int trace_start(struct trace *t, const char *func, int buffer_kb)
{
	char kb[32];

	memset(t, 0, sizeof(*t));
	t->reader = -1;
	t->func = func;
	if (access(TRACEFS "/trace_pipe", R_OK) < 0) {
		snprintf(t->err, sizeof(t->err), "no tracefs at " TRACEFS);
		return -1;
	}
	snprintf(kb, sizeof(kb), "%d", buffer_kb);
	if (knob("tracing_on", "0", t->err, sizeof(t->err)) ||
	    knob("current_tracer", "nop", t->err, sizeof(t->err)) ||
	    knob("buffer_size_kb", kb, t->err, sizeof(t->err)) ||
	    knob("set_ftrace_filter", func, t->err, sizeof(t->err)) ||
	    knob("set_graph_function", func, t->err, sizeof(t->err)) ||
	    knob("max_graph_depth", "1", t->err, sizeof(t->err)) ||
	    knob("options/funcgraph-tail", "1", t->err, sizeof(t->err)) ||
	    knob("trace", "", t->err, sizeof(t->err)) ||
	    knob("current_tracer", "function_graph", t->err, sizeof(t->err)))
		return -1;
	t->sh = mmap(NULL, sizeof(*t->sh), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (t->sh == MAP_FAILED) {
		t->sh = NULL;
		snprintf(t->err, sizeof(t->err), "mmap: %s", strerror(errno));
		return -1;
	}
	t->reader = fork();
	if (t->reader < 0) {
		snprintf(t->err, sizeof(t->err), "fork: %s", strerror(errno));
		return -1;
	}
	if (t->reader == 0)
		reader(t->sh, func);
	return knob("tracing_on", "1", t->err, sizeof(t->err)) ? -1 : 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t overruns(void)
{
	char path[128];
	uint64_t total = 0;
	int cpu;

	for (cpu = 0; cpu < 256; cpu++) {
		struct buf b = { 0 };
		char *p;

		snprintf(path, sizeof(path), TRACEFS "/per_cpu/cpu%d/stats",
			 cpu);
		if (read_file(path, &b) < 0)
			break;
		p = b.data ? strstr(b.data, "overrun:") : NULL;
		if (p)
			total += strtoull(p + 8, NULL, 10);
		buf_free(&b);
	}
	return total;
}

void trace_finish(struct trace *t, struct jw *w)
{
	static const double pct[] = { 50, 90, 99, 99.9 };
	static const char *const pname[] = { "p50", "p90", "p99", "p99_9" };
	struct trace_shared *sh = t->sh;
	int i;

	jw_obj_begin(w, "trace");
	jw_str(w, "function", t->func);
	jw_str(w, "tracer", "function_graph");
	jw_str(w, "what", "wall time from entry to return of each call, ns "
	       "(includes sleeping for the IO; not user-space access time)");
	write_knob(TRACEFS "/tracing_on", "0");
	if (sh && t->reader > 0) {
		sh->stop = 1;
		waitpid(t->reader, NULL, 0);
	}
	jw_u64(w, "overruns", overruns());
	/*
	 * The tracer stays on: switching it off re-patches kernel text with
	 * int3 breakpoints, and under multi-threaded TCG another vCPU can
	 * trip over a stale int3 (seen: "int3: 0000 [#1]" then a panic).
	 */
	if (t->err[0]) {
		jw_str(w, "error", t->err);
		t->err[0] = '\0';
	}
	if (!sh) {
		jw_obj_end(w);
		return;
	}
	jw_u64(w, "lines", sh->lines);
	jw_u64(w, "count", sh->samples);
	jw_u64(w, "kept", sh->kept);
	jw_u64(w, "sum_ns", sh->sum_ns);
	jw_u64(w, "min_ns", sh->min_ns);
	jw_u64(w, "max_ns", sh->max_ns);
	if (sh->kept) {
		qsort(sh->dur, sh->kept, sizeof(sh->dur[0]), cmp_u32);
		jw_obj_begin(w, "percentiles_ns");
		for (i = 0; i < 4; i++) {
			uint64_t idx = (uint64_t)(pct[i] / 100.0 *
						  (double)(sh->kept - 1) + 0.5);

			jw_u64(w, pname[i], sh->dur[idx]);
		}
		jw_obj_end(w);
	}
	jw_arr_begin(w, "histogram");	/* [upper bound ns (exclusive), count] */
	for (i = 0; i < NBUCKETS; i++) {
		if (!sh->hist[i])
			continue;
		jw_arr_begin(w, NULL);
		jw_u64(w, NULL, i ? 1ULL << i : 1);
		jw_u64(w, NULL, sh->hist[i]);
		jw_arr_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	munmap(sh, sizeof(*sh));
	t->sh = NULL;
}
