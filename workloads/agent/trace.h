/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Durations of one kernel function (do_swap_page) with the function_graph
 * tracer: max_graph_depth=1, funcgraph-tail on, trace_pipe read by a
 * child process while the workload runs.
 */
#ifndef AGENT_TRACE_H
#define AGENT_TRACE_H

#include <sys/types.h>

#include "jw.h"

struct trace_shared;

struct trace {
	pid_t reader;
	struct trace_shared *sh;
	const char *func;
	char err[256];
};

/* 0, or -1 with the reason in t->err */
int trace_start(struct trace *t, const char *func, int buffer_kb);
/* stop, collect and write the "trace" object */
void trace_finish(struct trace *t, struct jw *w);

#endif
