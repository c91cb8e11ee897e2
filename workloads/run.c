// SPDX-License-Identifier: GPL-2.0
/*
 * The tasks: map the area, touch its pages pass after pass, time the
 * first touch of every page, stamp and verify, then sweep the area once
 * more to check the last stamps.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "procfs.h"
#include "swapbench.h"
#include "work.h"

#define STOP_CHECK_MASK 63	/* look at the clock every 64 pages */
#define MIS_PRINT_MAX 16

struct task_ctx {
	const struct sb_config *cfg;
	struct sb_shared *sh;
	struct sb_task *t;
	const struct sb_group *g;
	unsigned int idx;	/* global task index */
	char *base;
	uint64_t npages;
	uint64_t deadline;	/* 0: none */
	uint64_t last_pass;	/* the pass most recently started */
	uint64_t last_pos;	/* pages completed in it */
	bool started;
	uint64_t cpu0;		/* thread CPU time at the start */
};

static void barrier_arrive(struct sb_shared *sh, unsigned int id)
{
	__atomic_add_fetch(&sh->barrier[id], 1, __ATOMIC_SEQ_CST);
}

/* wait for all tasks, or for the parent's abort when a child died */
static void barrier_wait(struct sb_shared *sh, unsigned int id,
			 unsigned int n)
{
	struct timespec ts = { 0, 100000 };

	barrier_arrive(sh, id);
	while (__atomic_load_n(&sh->barrier[id], __ATOMIC_ACQUIRE) < n &&
	       !__atomic_load_n(&sh->abort, __ATOMIC_ACQUIRE))
		nanosleep(&ts, NULL);
}

static void fg_done(struct task_ctx *c)
{
	if (c->cfg->mode != MODE_COMBINED || c->g->until_fg_done)
		return;
	if (!__atomic_sub_fetch(&c->sh->fg_left, 1, __ATOMIC_SEQ_CST))
		__atomic_store_n(&c->sh->stop, 1, __ATOMIC_RELEASE);
}

/*
 * Reserve the area with PROT_NONE guards around it (so it never merges
 * with another task's area and its smaps entry is its own), aligned to
 * 2 MiB for THP, then make it writable: that is where a strict overcommit
 * policy refuses with ENOMEM.
 */
static int area_setup(struct task_ctx *c)
{
	const struct sb_config *cfg = c->cfg;
	uint64_t size = c->g->size, len = size + 2 * SB_HPAGE;
	uintptr_t raw, base;
	void *p;

	p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	raw = (uintptr_t)p;
	base = (raw + cfg->page_size + SB_HPAGE - 1) & ~(SB_HPAGE - 1);
	if (mprotect((void *)base, size, PROT_READ | PROT_WRITE)) {
		int err = -errno;

		munmap(p, len);
		return err;
	}
	if (cfg->thp != THP_DEFAULT) {
		int advice = cfg->thp == THP_MADVISE ? MADV_HUGEPAGE :
			 MADV_NOHUGEPAGE;
		if (madvise((void *)base, size, advice))
			fprintf(stderr, "swapbench: madvise: %s\n",
				strerror(errno));
	}
	c->base = (char *)base;
	c->npages = size / cfg->page_size;
	c->t->base = base;
	c->t->size = size;
	return 0;
}

static void area_sample(struct task_ctx *c, bool first)
{
	struct area_info ai;
	uint64_t t0 = now_ns();

	smaps_area(c->t->base, c->t->base + c->t->size, &ai);
	if (first) {
		c->t->anon_huge_kb_first = ai.anon_huge_kb;
		c->t->excluded_ns += now_ns() - t0;
	} else {
		c->t->anon_huge_kb_end = ai.anon_huge_kb;
		c->t->rss_kb_end = ai.rss_kb;
		c->t->swap_kb_end = ai.swap_kb;
	}
}

static void note_mismatch(struct task_ctx *c, uint64_t page, uint64_t pass,
			  uint64_t off, uint64_t expected, uint64_t found)
{
	struct sb_task *t = c->t;
	struct mismatch m = {
		.addr = t->base + page * c->cfg->page_size + off,
		.page = page,
		.offset = off,
		.pass = pass,
		.expected = expected,
		.found = found,
	};

	t->mismatches++;
	if (t->nmis < SB_TASK_MIS)
		t->mis[t->nmis++] = m;
	if (t->mismatches <= MIS_PRINT_MAX)
		mismatch_print(&c->cfg->skey, c->idx, &m);
}

/* compare a page's old stamps with the expected ones */
static inline void check_page(struct task_ctx *c, uint64_t page,
			      uint64_t pass, uint64_t head, uint64_t tail,
			      uint64_t eh, uint64_t et)
{
	c->t->verified_pages++;
	if (__builtin_expect(head != eh, 0))
		note_mismatch(c, page, pass, 0, eh, head);
	else if (__builtin_expect(tail != et, 0))
		note_mismatch(c, page, pass, c->cfg->page_size - 8, et, tail);
}

static void test_hooks(struct task_ctx *c, uint64_t page, uint64_t *head)
{
	const struct sb_config *cfg = c->cfg;

	if ((int64_t)page == cfg->corrupt_page) {
		/* one byte of the page goes bad after it was written */
		((volatile unsigned char *)head)[0] ^= 0xff;
	}
	if ((int64_t)page == cfg->kill_page)
		kill(getpid(), SIGKILL);
}

static bool should_stop(struct task_ctx *c, uint64_t pass)
{
	if (c->g->until_fg_done && pass > 0 &&
	    __atomic_load_n(&c->sh->stop, __ATOMIC_ACQUIRE))
		return true;
	return c->deadline && now_ns() >= c->deadline;
}

/* one pass; false if it was cut short */
static bool run_pass(struct task_ctx *c, uint64_t pass)
{
	const struct sb_config *cfg = c->cfg;
	const struct stamp_key *k = &cfg->skey;
	struct sb_task *t = c->t;
	bool record = cfg->latency && pass >= cfg->warmup_passes;
	bool check = cfg->verify && pass > 0;
	bool hooks = c->idx == 0 && pass == 0 &&
		     (cfg->corrupt_page >= 0 || cfg->kill_page >= 0);
	uint64_t psz = cfg->page_size, page, n = 0;
	uint64_t t0 = 0, t1 = 0;
	struct order o;

	order_init(&o, c->g->pattern, c->npages, cfg->step, cfg->seed,
		   c->idx, pass);
	c->last_pass = pass;
	c->last_pos = 0;
	c->started = true;
	while (order_next(&o, &page)) {
		uint64_t *head = (uint64_t *)(c->base + page * psz);
		volatile uint64_t *tail = (uint64_t *)(c->base + page * psz +
						       psz - 8);
		uint64_t nh = stamp_head(k, page, pass);
		uint64_t nt = stamp_tail(k, page, pass);
		uint64_t old = 0;

		/* the first touch of the page: the access that may fault */
		if (record)
			t0 = now_ns();
		if (check)
			old = __atomic_exchange_n(head, nh, __ATOMIC_RELAXED);
		else
			*(volatile uint64_t *)head = nh;
		if (record) {
			t1 = now_ns();
			hist_add(&t->hist, t1 - t0);
		}
		if (check) {
			uint64_t old_tail = *tail;

			*tail = nt;
			check_page(c, page, pass - 1, old, old_tail,
				   stamp_head(k, page, pass - 1),
				   stamp_tail(k, page, pass - 1));
		} else {
			*tail = nt;
		}
		if (__builtin_expect(hooks, 0))
			test_hooks(c, page, head);
		c->last_pos++;

		if (cfg->work == WORK_BUSY)
			work_busy(record ? t1 : now_ns(), cfg->work_ns);
		else if (cfg->work == WORK_LOOP)
			work_loop(cfg->loop_iters);

		if (!(++n & STOP_CHECK_MASK) && should_stop(c, pass))
			break;
	}
	t->pages += c->last_pos;
	return c->last_pos == o.n;
}

static uint64_t thread_cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) *
	       1000000000ULL + (uint64_t)(ru.ru_utime.tv_usec +
					  ru.ru_stime.tv_usec) * 1000ULL;
}

static void first_pass_done(struct task_ctx *c)
{
	c->t->first_pass_ns = now_ns() - c->t->t_start;
	c->t->first_pass_cpu_ns = thread_cpu_ns() - c->cpu0;
}

static void run_main(struct task_ctx *c)
{
	const struct sb_config *cfg = c->cfg;
	uint64_t pass;

	for (pass = 0;; pass++) {
		if (c->g->until_fg_done) {
			/* background: at least one pass, then until fg ends */
			if (pass > 0 &&
			    __atomic_load_n(&c->sh->stop, __ATOMIC_ACQUIRE))
				break;
		} else if (cfg->passes && pass >= cfg->passes) {
			break;
		}
		if (pass > 0 && should_stop(c, pass))
			break;
		if (!run_pass(c, pass)) {
			if (pass == 0)
				first_pass_done(c);
			break;
		}
		c->t->passes++;
		if (pass == 0) {
			first_pass_done(c);
			area_sample(c, true);
		}
	}
}

/* read every page back and check the stamps left by the run */
static void final_sweep(struct task_ctx *c)
{
	const struct sb_config *cfg = c->cfg;
	const struct stamp_key *k = &cfg->skey;
	uint64_t psz = cfg->page_size, page, i = 0, p = c->last_pass;
	uint64_t t0 = now_ns();
	struct order o;

	if (!c->started)
		return;
	order_init(&o, c->g->pattern, c->npages, cfg->step, cfg->seed,
		   c->idx, p);
	while (order_next(&o, &page)) {
		const volatile uint64_t *head =
			(const uint64_t *)(c->base + page * psz);
		const volatile uint64_t *tail =
			(const uint64_t *)(c->base + page * psz + psz - 8);
		uint64_t h = *head, tl = *tail;

		if (i < c->last_pos)
			check_page(c, page, p, h, tl, stamp_head(k, page, p),
				   stamp_tail(k, page, p));
		else if (p > 0)
			check_page(c, page, p - 1, h, tl,
				   stamp_head(k, page, p - 1),
				   stamp_tail(k, page, p - 1));
		else	/* never written: must still read as zero */
			check_page(c, page, p, h, tl, 0, 0);
		i++;
	}
	c->t->final_pages = i;
	c->t->final_ns = now_ns() - t0;
}

static void *task_thread(void *arg)
{
	struct task_ctx *c = arg;
	const struct sb_config *cfg = c->cfg;
	struct sb_task *t = c->t;
	struct rusage r0, r1;
	int err;

	t->pid = getpid();
	t->status = ST_RUNNING;
	err = area_setup(c);
	if (err) {
		t->err = -err;
		t->status = err == -ENOMEM ? ST_ENOMEM : ST_ERROR;
		fprintf(stderr, "swapbench: task %u: mapping %" PRIu64
			" bytes: %s\n", c->idx, c->g->size, strerror(-err));
	}
	barrier_wait(c->sh, 0, cfg->ntasks);
	if (!err) {
		getrusage(RUSAGE_THREAD, &r0);
		c->cpu0 = thread_cpu_ns();
		t->t_start = now_ns();
		if (cfg->runtime_ns)
			c->deadline = t->t_start + cfg->runtime_ns;
		run_main(c);
		t->t_end = now_ns();
		t->cpu_ns = thread_cpu_ns() - c->cpu0;
		getrusage(RUSAGE_THREAD, &r1);
		t->minflt = (uint64_t)(r1.ru_minflt - r0.ru_minflt);
		t->majflt = (uint64_t)(r1.ru_majflt - r0.ru_majflt);
		area_sample(c, false);
	}
	fg_done(c);
	barrier_wait(c->sh, 1, cfg->ntasks);
	if (!err && cfg->final_verify)
		final_sweep(c);
	if (!err)
		t->status = t->mismatches ? ST_MISMATCH : ST_OK;
	return NULL;
}

int child_main(const struct sb_config *cfg, struct sb_shared *sh,
	       unsigned int group, unsigned int proc)
{
	const struct sb_group *g = &cfg->grp[group];
	struct task_ctx *ctx;
	pthread_t *tid;
	pthread_attr_t attr;
	unsigned int j;
	int worst = ST_OK;
	bool *live;

	ctx = calloc(g->threads, sizeof(*ctx));
	tid = calloc(g->threads, sizeof(*tid));
	live = calloc(g->threads, sizeof(*live));
	if (!ctx || !tid || !live) {
		free(ctx);
		free(tid);
		free(live);
		return EXIT_ERROR;	/* the parent sees a bad exit */
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1 << 20);
	for (j = 0; j < g->threads; j++) {
		struct task_ctx *c = &ctx[j];

		c->cfg = cfg;
		c->sh = sh;
		c->g = g;
		c->idx = g->first_task + proc * g->threads + j;
		c->t = &sh->task[c->idx];
		if (pthread_create(&tid[j], &attr, task_thread, c)) {
			c->t->status = ST_ERROR;
			c->t->err = EAGAIN;
			fg_done(c);
			barrier_arrive(sh, 0);
			barrier_arrive(sh, 1);
			continue;
		}
		live[j] = true;
	}
	for (j = 0; j < g->threads; j++) {
		int st;

		if (live[j])
			pthread_join(tid[j], NULL);
		st = ctx[j].t->status;
		if (st < ST_OK)
			st = ST_ERROR;
		if (st > worst)
			worst = st;	/* the most severe (enum order) */
	}
	pthread_attr_destroy(&attr);
	free(ctx);
	free(tid);
	free(live);
	return exit_of_status(worst);
}

void dump_order(const struct sb_config *cfg)
{
	const struct sb_group *g = &cfg->grp[0];
	uint64_t pass, page, passes = cfg->passes ? cfg->passes : 1;
	struct order o;

	for (pass = 0; pass < passes; pass++) {
		bool first = true;

		order_init(&o, g->pattern, g->size / cfg->page_size,
			   cfg->step, cfg->seed, 0, pass);
		while (order_next(&o, &page)) {
			printf(first ? "%" PRIu64 : " %" PRIu64, page);
			first = false;
		}
		putchar('\n');
	}
}
