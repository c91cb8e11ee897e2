// SPDX-License-Identifier: GPL-2.0
/*
 * Results: the JSON document on stdout and the summary on stderr.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jw.h"
#include "swapbench.h"
#include "swapout.h"
#include "sysinfo.h"

/* sums over a set of tasks */
struct agg {
	int status;
	uint64_t tasks;
	uint64_t pages;
	uint64_t minflt;
	uint64_t majflt;
	uint64_t mismatches;	/* the verifiers' apart, in fork_* */
	uint64_t verified;
	uint64_t fork_mismatches;
	uint64_t fork_verified;
	uint64_t lost;		/* unreadable from swap, the verifiers' too */
	uint64_t io_killed;	/* processes and verifiers */
	uint64_t final_pages;
	uint64_t final_ns;	/* longest final sweep */
	uint64_t passes_min;
	uint64_t passes_max;
	uint64_t t_start;	/* earliest */
	uint64_t t_end;		/* latest */
	int64_t huge_first_kb;
	int64_t huge_end_kb;
	int64_t rss_end_kb;
	int64_t swap_end_kb;
	struct hist h;
};

static void agg_init(struct agg *a)
{
	memset(a, 0, sizeof(*a));
	a->status = ST_OK;
	a->passes_min = UINT64_MAX;
	a->t_start = UINT64_MAX;
	a->huge_first_kb = -1;
	a->huge_end_kb = -1;
	a->rss_end_kb = -1;
	a->swap_end_kb = -1;
	hist_init(&a->h);
}

static void add_kb(int64_t *sum, int64_t v)
{
	if (v < 0)
		return;
	*sum = (*sum < 0 ? 0 : *sum) + v;
}

static void agg_task(struct agg *a, const struct sb_task *t)
{
	int st = t->status < ST_OK ? ST_ERROR : t->status;

	if (st > a->status)
		a->status = st;
	a->tasks++;
	a->pages += t->pages;
	a->minflt += t->minflt;
	a->majflt += t->majflt;
	a->mismatches += t->mismatches;
	a->verified += t->verified_pages;
	a->fork_mismatches += t->fork_mismatches;
	a->fork_verified += t->fork_verified_pages;
	a->lost += t->lost_pages + t->fork_lost_pages;
	a->final_pages += t->final_pages;
	if (t->final_ns > a->final_ns)
		a->final_ns = t->final_ns;
	if (t->passes < a->passes_min)
		a->passes_min = t->passes;
	if (t->passes > a->passes_max)
		a->passes_max = t->passes;
	if (t->t_start) {
		if (t->t_start < a->t_start)
			a->t_start = t->t_start;
		if (t->t_end > a->t_end)
			a->t_end = t->t_end;
	}
	add_kb(&a->huge_first_kb, t->anon_huge_kb_first);
	add_kb(&a->huge_end_kb, t->anon_huge_kb_end);
	add_kb(&a->rss_end_kb, t->rss_kb_end);
	add_kb(&a->swap_end_kb, t->swap_kb_end);
	hist_merge(&a->h, &t->hist);
}

static double agg_wall(const struct agg *a)
{
	if (a->t_start == UINT64_MAX || a->t_end < a->t_start)
		return 0;
	return (double)(a->t_end - a->t_start) / 1e9;
}

static double rate(double n, double s)
{
	return s > 0 ? n / s : 0;
}

/*
 * Fill mode: pages written to swap per second over the steady part of the
 * fill (swapout.h), beside how long that part and the lead-in were.
 */
static void emit_swapout(struct jw *w, const struct swapout_trace *tr,
			 const struct agg *a)
{
	struct swapout_steady st;

	if (!tr || a->t_start == UINT64_MAX) {
		jw_null(w, "swapout");
		return;
	}
	swapout_steady(tr, a->t_start, a->t_end, &st);
	jw_obj_begin(w, "swapout");
	jw_u64(w, "interval_ms", SO_INTERVAL_MS);
	jw_u64(w, "samples", tr->n);
	jw_bool(w, "truncated", tr->truncated);
	jw_bool(w, "realtime", tr->rt);
	if (tr->err)
		jw_str(w, "error", strerror(tr->err));
	else
		jw_null(w, "error");
	jw_u64(w, "pages", st.pages);
	jw_dbl(w, "start_s", st.start_s, 6);
	jw_u64(w, "window_samples", st.window_samples);
	if (st.valid) {
		jw_dbl(w, "steady_s", st.steady_s, 6);
		jw_dbl(w, "steady_pages_per_s", st.pages_per_s, 1);
	} else {
		jw_null(w, "steady_s");
		jw_null(w, "steady_pages_per_s");
	}
	jw_obj_end(w);
}

static void jw_kb(struct jw *w, const char *key, int64_t kb)
{
	if (kb < 0)
		jw_null(w, key);
	else
		jw_i64(w, key, kb);
}

static void emit_latency(struct jw *w, const struct sb_config *cfg,
			 const struct hist *h)
{
	char key[32];
	unsigned int i;

	if (!cfg->latency) {
		jw_null(w, "latency");
		return;
	}
	jw_obj_begin(w, "latency");
	jw_u64(w, "samples", h->count);
	jw_dbl(w, "avg_us", hist_mean(h) / 1e3, 3);
	jw_dbl(w, "min_us", h->count ? (double)h->min / 1e3 : 0, 3);
	jw_dbl(w, "max_us", (double)h->max / 1e3, 3);
	for (i = 0; i < HIST_NPCT; i++) {
		snprintf(key, sizeof(key), "%s_us", hist_pct_name[i]);
		jw_dbl(w, key, hist_percentile(h, hist_pct[i]) / 1e3, 3);
	}
	jw_obj_end(w);
}

/* the fields a group and the total share */
static void emit_agg(struct jw *w, const struct sb_config *cfg,
		     const struct agg *a, uint64_t minflt, uint64_t majflt)
{
	double wall = agg_wall(a);
	double bytes = (double)a->pages * (double)cfg->page_size;

	jw_str(w, "status", status_name(a->status));
	jw_u64(w, "tasks", a->tasks);
	jw_u64(w, "passes_min", a->tasks ? a->passes_min : 0);
	jw_u64(w, "passes_max", a->passes_max);
	jw_u64(w, "pages", a->pages);
	jw_u64(w, "bytes", a->pages * cfg->page_size);
	jw_dbl(w, "wall_s", wall, 6);
	jw_dbl(w, "pages_per_s", rate((double)a->pages, wall), 1);
	jw_dbl(w, "bytes_per_s", rate(bytes, wall), 1);
	jw_u64(w, "minflt", minflt);
	jw_u64(w, "majflt", majflt);
	jw_u64(w, "mismatches", a->mismatches);
	jw_u64(w, "verified_pages", a->verified);
	jw_u64(w, "lost_pages", a->lost);
	jw_u64(w, "procs_io_killed", a->io_killed);
	jw_u64(w, "fork_mismatches", a->fork_mismatches);
	jw_u64(w, "fork_verified_pages", a->fork_verified);
	jw_u64(w, "final_verify_pages", a->final_pages);
	jw_dbl(w, "final_verify_s", (double)a->final_ns / 1e9, 6);
	jw_kb(w, "anon_huge_kb_first_pass", a->huge_first_kb);
	jw_kb(w, "anon_huge_kb_end", a->huge_end_kb);
	jw_kb(w, "rss_kb_end", a->rss_end_kb);
	jw_kb(w, "swap_kb_end", a->swap_end_kb);
	emit_latency(w, cfg, &a->h);
}

static const char *mode_name(enum sb_mode m)
{
	return m == MODE_FILL ? "fill" :
	       m == MODE_COMBINED ? "combined" : "access";
}

static const char *thp_name(enum sb_thp t)
{
	return t == THP_MADVISE ? "madvise" :
	       t == THP_NOHUGE ? "nohuge" : "default";
}

static const char *work_name(enum sb_work w)
{
	return w == WORK_BUSY ? "busy" : w == WORK_LOOP ? "loop" : "none";
}

static void emit_config(struct jw *w, const struct sb_config *cfg)
{
	jw_obj_begin(w, "config");
	jw_u64(w, "seed", cfg->seed);
	jw_u64(w, "passes", cfg->passes);
	jw_dbl(w, "runtime_s", (double)cfg->runtime_ns / 1e9, 3);
	jw_u64(w, "warmup_passes", cfg->warmup_passes);
	jw_u64(w, "step_pages", cfg->step);
	jw_bool(w, "verify", cfg->verify);
	jw_bool(w, "final_verify", cfg->final_verify);
	jw_bool(w, "serial_final_verify", cfg->serial_final);
	jw_bool(w, "reread", cfg->reread);
	jw_bool(w, "latency", cfg->latency);
	jw_str(w, "thp", thp_name(cfg->thp));
	jw_u64(w, "thp_holes", cfg->thp_holes);
	jw_u64(w, "page_fill_words", cfg->fill_words);
	jw_str(w, "work", work_name(cfg->work));
	jw_dbl(w, "work_us", (double)cfg->work_ns / 1e3, 3);
	jw_u64(w, "work_loop_iterations", cfg->loop_iters);
	if (cfg->work == WORK_LOOP)
		jw_str(w, "work_calibration", cfg->calib_file);
	else
		jw_null(w, "work_calibration");
	jw_bool(w, "survive_sigbus", cfg->survive_sigbus);
	jw_bool(w, "fork_share", cfg->fork_share);
	jw_u64(w, "fork_after_pass", cfg->fork_pass);
	jw_i64(w, "corrupt_page", cfg->corrupt_page);
	jw_i64(w, "kill_page", cfg->kill_page);
	jw_i64(w, "sigbus_page", cfg->sigbus_page);
	jw_i64(w, "lost_page", cfg->lost_page);
	jw_obj_end(w);
}

static void emit_task(struct jw *w, const struct sb_config *cfg,
		      const struct sb_task *t, unsigned int idx)
{
	uint64_t ns = t->t_end > t->t_start + t->excluded_ns ?
		      t->t_end - t->t_start - t->excluded_ns : 0;
	double s = (double)ns / 1e9;

	jw_obj_begin(w, NULL);
	jw_u64(w, "index", idx);
	jw_str(w, "group", cfg->grp[t->group].name);
	jw_u64(w, "proc", t->proc);
	jw_u64(w, "thread", t->thread);
	jw_i64(w, "pid", t->pid);
	jw_str(w, "status", status_name(t->status));
	if (t->err)
		jw_str(w, "error", strerror(t->err));
	else
		jw_null(w, "error");
	jw_hex(w, "base", t->base);
	jw_u64(w, "size_bytes", t->size);
	jw_u64(w, "passes", t->passes);
	jw_u64(w, "pages", t->pages);
	jw_u64(w, "bytes", t->pages * cfg->page_size);
	jw_dbl(w, "elapsed_s", s, 6);
	jw_dbl(w, "first_pass_s", (double)t->first_pass_ns / 1e9, 6);
	jw_dbl(w, "cpu_s", (double)t->cpu_ns / 1e9, 6);
	jw_dbl(w, "first_pass_cpu_s", (double)t->first_pass_cpu_ns / 1e9, 6);
	jw_dbl(w, "pages_per_s", rate((double)t->pages, s), 1);
	jw_dbl(w, "bytes_per_s",
	       rate((double)t->pages * (double)cfg->page_size, s), 1);
	jw_u64(w, "minflt", t->minflt);
	jw_u64(w, "majflt", t->majflt);
	jw_u64(w, "mismatches", t->mismatches);
	jw_u64(w, "verified_pages", t->verified_pages);
	jw_u64(w, "fork_mismatches", t->fork_mismatches);
	jw_u64(w, "fork_verified_pages", t->fork_verified_pages);
	jw_u64(w, "lost_pages", t->lost_pages);
	jw_u64(w, "fork_lost_pages", t->fork_lost_pages);
	jw_dbl(w, "fork_verify_s", (double)t->fork_ns / 1e9, 6);
	jw_u64(w, "final_verify_pages", t->final_pages);
	jw_dbl(w, "final_verify_s", (double)t->final_ns / 1e9, 6);
	jw_dbl(w, "final_verify_start_mono_s", (double)t->final_t0 / 1e9, 6);
	jw_kb(w, "anon_huge_kb_first_pass", t->anon_huge_kb_first);
	jw_kb(w, "anon_huge_kb_end", t->anon_huge_kb_end);
	jw_kb(w, "rss_kb_end", t->rss_kb_end);
	jw_kb(w, "swap_kb_end", t->swap_kb_end);
	emit_latency(w, cfg, &t->hist);
	jw_obj_end(w);
}

static void emit_mismatch(struct jw *w, const struct sb_config *cfg,
			  const struct sb_task *t, unsigned int i,
			  const struct mismatch *m, bool fork)
{
	jw_obj_begin(w, NULL);
	jw_u64(w, "task", i);
	jw_str(w, "group", cfg->grp[t->group].name);
	jw_bool(w, "fork", fork);
	jw_u64(w, "page", m->page);
	jw_hex(w, "addr", m->addr);
	jw_u64(w, "offset", m->offset);
	jw_u64(w, "pass", m->pass);
	jw_hex(w, "expected", m->expected);
	jw_hex(w, "found", m->found);
	jw_obj_end(w);
}

static void emit_mismatches(struct jw *w, const struct sb_config *cfg,
			    const struct sb_shared *sh)
{
	unsigned int i, j;

	jw_arr_begin(w, "mismatches");
	for (i = 0; i < cfg->ntasks; i++) {
		const struct sb_task *t = &sh->task[i];

		for (j = 0; j < t->nmis; j++)
			emit_mismatch(w, cfg, t, i, &t->mis[j], false);
		for (j = 0; j < t->fork_nmis; j++)
			emit_mismatch(w, cfg, t, i, &t->fork_mis[j], true);
	}
	jw_arr_end(w);
}

static void emit_procs(struct jw *w, const struct sb_config *cfg,
		       const struct sb_shared *sh, const struct sb_result *res)
{
	unsigned int i;

	jw_arr_begin(w, "processes");
	for (i = 0; i < cfg->nprocs; i++) {
		const struct sb_proc *p = &res->procs[i];
		const struct sb_pstate *ps = &sh->proc[i];

		jw_obj_begin(w, NULL);
		jw_str(w, "group", cfg->grp[p->group].name);
		jw_u64(w, "index", p->index);
		jw_i64(w, "pid", p->pid);
		jw_str(w, "status", status_name(p->status));
		jw_i64(w, "exit_code", p->exit_code);
		jw_i64(w, "signal", p->signal);
		jw_u64(w, "minflt", p->minflt);
		jw_u64(w, "majflt", p->majflt);
		jw_i64(w, "fork_pid", ps->fork_pid);
		if (cfg->fork_share)
			jw_str(w, "fork_status", status_name(ps->fork_status));
		else
			jw_null(w, "fork_status");
		jw_i64(w, "fork_signal", ps->fork_signal);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* processes and their verifiers killed by SIGBUS with --survive-sigbus */
static uint64_t count_io_killed(const struct sb_config *cfg,
				const struct sb_shared *sh,
				const struct sb_result *res, unsigned int g)
{
	const struct sb_group *gr = &cfg->grp[g];
	uint64_t n = 0;
	unsigned int i;

	for (i = gr->first_proc; i < gr->first_proc + gr->procs; i++) {
		const struct sb_pstate *ps = &sh->proc[i];

		n += res->procs[i].status == ST_IO_KILLED;
		/* and not one that went down with its process */
		n += ps->fork_status == ST_IO_KILLED &&
		     ps->fork_signal == SIGBUS;
	}
	return n;
}

static void group_agg(const struct sb_config *cfg, const struct sb_shared *sh,
		      const struct sb_result *res, unsigned int g,
		      struct agg *a)
{
	const struct sb_group *gr = &cfg->grp[g];
	unsigned int i;

	agg_init(a);
	for (i = 0; i < gr->procs * gr->threads; i++)
		agg_task(a, &sh->task[gr->first_task + i]);
	a->io_killed = count_io_killed(cfg, sh, res, g);
}

static void total_agg(const struct sb_config *cfg, const struct sb_shared *sh,
		      const struct sb_result *res, struct agg *a)
{
	unsigned int i;

	agg_init(a);
	for (i = 0; i < cfg->ntasks; i++)
		agg_task(a, &sh->task[i]);
	for (i = 0; i < cfg->ngroups; i++)
		a->io_killed += count_io_killed(cfg, sh, res, i);
}

void report_json(const struct sb_config *cfg, const struct sb_shared *sh,
		 const struct sb_result *res)
{
	struct agg *a = malloc(sizeof(*a)), *tot = malloc(sizeof(*tot));
	struct jw w;
	unsigned int g, i;

	if (!a || !tot) {
		fprintf(stderr, "swapbench: no memory for the report\n");
		free(a);
		free(tot);
		return;
	}
	jw_init(&w, stdout);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "schema", SB_SCHEMA);
	total_agg(cfg, sh, res, tot);
	jw_str(&w, "status", status_name(res->status));
	jw_i64(&w, "exit_code", res->exit_code);
	jw_u64(&w, "procs_io_killed", tot->io_killed);
	jw_str(&w, "mode", mode_name(cfg->mode));
	emit_config(&w, cfg);
	sysinfo_emit(&w, cfg->page_size, cfg->mem_total, cfg->swap_total);

	jw_arr_begin(&w, "groups");
	for (g = 0; g < cfg->ngroups; g++) {
		const struct sb_group *gr = &cfg->grp[g];
		uint64_t minflt = 0, majflt = 0;

		for (i = 0; i < gr->procs; i++) {
			minflt += res->procs[gr->first_proc + i].minflt;
			majflt += res->procs[gr->first_proc + i].majflt;
		}
		group_agg(cfg, sh, res, g, a);
		jw_obj_begin(&w, NULL);
		jw_str(&w, "name", gr->name);
		jw_str(&w, "pattern", pattern_name(gr->pattern));
		jw_u64(&w, "procs", gr->procs);
		jw_u64(&w, "threads", gr->threads);
		jw_u64(&w, "size_per_task_bytes", gr->size);
		emit_agg(&w, cfg, a, minflt, majflt);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);

	jw_obj_begin(&w, "total");
	emit_agg(&w, cfg, tot, res->minflt, res->majflt);
	jw_obj_end(&w);

	if (cfg->mode == MODE_FILL) {
		double wall = agg_wall(tot);
		double bytes = (double)tot->pages * (double)cfg->page_size;

		jw_obj_begin(&w, "fill");
		if (cfg->fill_frac > 0)
			jw_dbl(&w, "target_frac", cfg->fill_frac, 4);
		else
			jw_null(&w, "target_frac");
		jw_u64(&w, "target_bytes", (uint64_t)cfg->ntasks *
		       cfg->grp[0].size);
		jw_u64(&w, "written_bytes", tot->pages * cfg->page_size);
		jw_dbl(&w, "wall_s", wall, 6);
		jw_dbl(&w, "write_bytes_per_s", rate(bytes, wall), 1);
		emit_swapout(&w, res->swapout, tot);
		jw_obj_end(&w);
	} else {
		jw_null(&w, "fill");
	}

	jw_arr_begin(&w, "tasks");
	for (i = 0; i < cfg->ntasks; i++)
		emit_task(&w, cfg, &sh->task[i], i);
	jw_arr_end(&w);
	emit_procs(&w, cfg, sh, res);
	emit_mismatches(&w, cfg, sh);
	jw_obj_end(&w);
	jw_finish(&w);
	free(a);
	free(tot);
}

/* "12.3us" or "4.56ms", the seeds' style */
static const char *fmt_us(char *buf, size_t len, double ns)
{
	if (ns >= 1e6)
		snprintf(buf, len, "%.2fms", ns / 1e6);
	else
		snprintf(buf, len, "%.2fus", ns / 1e3);
	return buf;
}

static void human_latency(const struct hist *h)
{
	static const char *const names[HIST_NPCT] = {
		"50th", "60th", "70th", "80th", "90th", "95th", "99th",
		"99.9th",
	};
	char b1[32], b2[32], b3[32];
	unsigned int i;

	fprintf(stderr, "  samples: %" PRIu64 ", average: %s, min: %s, "
		"max: %s\n  ", h->count, fmt_us(b1, sizeof(b1), hist_mean(h)),
		fmt_us(b2, sizeof(b2), h->count ? (double)h->min : 0),
		fmt_us(b3, sizeof(b3), (double)h->max));
	for (i = 0; i < HIST_NPCT; i++)
		fprintf(stderr, "%s%s: %s", i ? ", " : "", names[i],
			fmt_us(b1, sizeof(b1),
			       hist_percentile(h, hist_pct[i])));
	fputc('\n', stderr);
}

static void human_agg(const struct sb_config *cfg, const char *name,
		      const struct agg *a, uint64_t minflt, uint64_t majflt)
{
	double wall = agg_wall(a);
	double mib = (double)a->pages * (double)cfg->page_size / 1048576.0;

	fprintf(stderr, "%s: %" PRIu64 " pages (%.1f MiB) in %.3f s: "
		"%.0f pages/s, %.1f MiB/s; faults %" PRIu64 " minor, %"
		PRIu64 " major; verified %" PRIu64 " pages, %" PRIu64
		" mismatches; %s\n", name, a->pages, mib, wall,
		rate((double)a->pages, wall), rate(mib, wall), minflt,
		majflt, a->verified, a->mismatches, status_name(a->status));
	if (cfg->fork_share)
		fprintf(stderr, "  fork-share children: verified %" PRIu64
			" pages, %" PRIu64 " mismatches\n", a->fork_verified,
			a->fork_mismatches);
	if (a->lost)
		fprintf(stderr, "  pages lost to swap read errors (SIGBUS), "
			"written anew: %" PRIu64 "\n", a->lost);
	if (a->io_killed)
		fprintf(stderr, "  processes io-killed (SIGBUS): %" PRIu64 "\n",
			a->io_killed);
	if (a->huge_first_kb >= 0)
		fprintf(stderr, "  AnonHugePages after pass 1: %" PRId64
			" kB, at the end: %" PRId64 " kB\n", a->huge_first_kb,
			a->huge_end_kb);
	if (cfg->latency)
		human_latency(&a->h);
}

void report_human(const struct sb_config *cfg, const struct sb_shared *sh,
		  const struct sb_result *res)
{
	struct agg *a = malloc(sizeof(*a));
	unsigned int g, i;
	char name[64];

	if (!a)
		return;
	fprintf(stderr, "swapbench: mode %s, seed %" PRIu64 ", work %s %.1f us"
		", verify %s, latency %s\n", mode_name(cfg->mode), cfg->seed,
		work_name(cfg->work), (double)cfg->work_ns / 1e3,
		cfg->verify ? "on" : "off", cfg->latency ? "on" : "off");
	for (g = 0; g < cfg->ngroups; g++) {
		const struct sb_group *gr = &cfg->grp[g];
		uint64_t minflt = 0, majflt = 0;

		for (i = 0; i < gr->procs; i++) {
			minflt += res->procs[gr->first_proc + i].minflt;
			majflt += res->procs[gr->first_proc + i].majflt;
		}
		group_agg(cfg, sh, res, g, a);
		snprintf(name, sizeof(name), "%s (%s, %ux%u x %.1f MiB)",
			 gr->name, pattern_name(gr->pattern), gr->procs,
			 gr->threads, (double)gr->size / 1048576.0);
		human_agg(cfg, name, a, minflt, majflt);
	}
	if (cfg->ngroups > 1) {
		total_agg(cfg, sh, res, a);
		human_agg(cfg, "total", a, res->minflt, res->majflt);
	}
	fprintf(stderr, "swapbench: status %s, exit %d\n",
		status_name(res->status), res->exit_code);
	free(a);
}
