// SPDX-License-Identifier: GPL-2.0
/*
 * The tasks: map the area, touch its pages pass after pass, time the
 * first touch of every page, stamp and verify, then sweep the area once
 * more to check the last stamps.  With --fork-share the threads of a
 * process meet after pass 0 (or --fork-after-pass N) and its main thread
 * forks a verifier that sweeps the areas it shares copy-on-write while
 * the passes go on.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procfs.h"
#include "swapbench.h"
#include "work.h"

#define STOP_CHECK_MASK 63	/* look at the clock every 64 pages */
#define MIS_PRINT_MAX 16

/* --fork-share: the process's threads meet after pass fork_pass */
struct fork_meet {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int arrived;
	bool released;		/* the main thread has forked */
};

struct task_ctx {
	const struct sb_config *cfg;
	struct sb_shared *sh;
	struct sb_task *t;
	const struct sb_group *g;
	struct fork_meet *meet;	/* NULL without --fork-share */
	unsigned int idx;	/* global task index */
	unsigned int pidx;	/* global process index */
	bool met;		/* has been to the fork meeting */
	char *base;
	uint64_t npages;
	uint64_t deadline;	/* 0: none */
	uint64_t last_pass;	/* the pass most recently started */
	uint64_t last_pos;	/* pages completed in it */
	bool started;
	uint64_t cpu0;		/* thread CPU time at the start */
};

static void barrier_arrive(struct sb_shared *sh, unsigned int pidx,
			   unsigned int id)
{
	__atomic_add_fetch(&sh->proc[pidx].arrived[id], 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&sh->barrier[id], 1, __ATOMIC_SEQ_CST);
}

/*
 * All tasks have arrived.  Once a process is gone (io-killed), the sum
 * of all arrivals no longer tells: count each process on its own, a
 * gone one as if all its tasks had arrived.
 */
bool barrier_done(const struct sb_config *cfg, const struct sb_shared *sh,
		  unsigned int id)
{
	unsigned int i, n = 0;

	if (!__atomic_load_n(&sh->ngone, __ATOMIC_SEQ_CST))
		return __atomic_load_n(&sh->barrier[id], __ATOMIC_SEQ_CST) >=
		       cfg->ntasks;
	for (i = 0; i < cfg->nprocs; i++) {
		const struct sb_pstate *p = &sh->proc[i];

		n += __atomic_load_n(&p->gone, __ATOMIC_SEQ_CST) ? p->threads :
		     __atomic_load_n(&p->arrived[id], __ATOMIC_SEQ_CST);
	}
	return n >= cfg->ntasks;
}

/* wait for all live tasks, or for the parent's abort when a child died */
static void barrier_wait(const struct sb_config *cfg, struct sb_shared *sh,
			 unsigned int pidx, unsigned int id)
{
	struct timespec ts = { 0, 100000 };

	barrier_arrive(sh, pidx, id);
	while (!barrier_done(cfg, sh, id) &&
	       !__atomic_load_n(&sh->abort, __ATOMIC_ACQUIRE))
		nanosleep(&ts, NULL);
}

/*
 * --serial-final-verify: the final sweeps go one task at a time, in task
 * order.  Sweeping together, the tasks' reads alternate between their
 * swap areas and a seeking disk pays a seek and a rotation for nearly
 * every readahead window (quick run 20261204-025454: 17,000 reads in
 * ~115 s per rotational thp-swpout cell).  A task's turn comes when
 * every task before it has swept, has nothing to sweep, or went down
 * with its process.
 */
static bool sweep_turn(const struct sb_config *cfg, const struct sb_shared *sh,
		       unsigned int idx)
{
	unsigned int j;

	for (j = 0; j < idx; j++) {
		const struct sb_task *t = &sh->task[j];
		const struct sb_pstate *p =
			&sh->proc[cfg->grp[t->group].first_proc + t->proc];

		if (!__atomic_load_n(&t->swept, __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&p->gone, __ATOMIC_SEQ_CST))
			return false;
	}
	return true;
}

static void sweep_wait_turn(const struct task_ctx *c)
{
	struct timespec ts = { 0, 100000 };

	while (!sweep_turn(c->cfg, c->sh, c->idx) &&
	       !__atomic_load_n(&c->sh->abort, __ATOMIC_ACQUIRE))
		nanosleep(&ts, NULL);
}

static void sweep_done(struct sb_task *t)
{
	__atomic_store_n(&t->swept, 1, __ATOMIC_RELEASE);
}

/* combined mode: stop the background once every foreground task is done */
void fg_check_stop(const struct sb_config *cfg, struct sb_shared *sh)
{
	const struct sb_group *fg = &cfg->grp[0];
	unsigned int i, n = 0;

	if (cfg->mode != MODE_COMBINED)
		return;
	for (i = 0; i < fg->procs; i++) {
		const struct sb_pstate *p = &sh->proc[fg->first_proc + i];

		n += __atomic_load_n(&p->gone, __ATOMIC_SEQ_CST) ? p->threads :
		     __atomic_load_n(&p->fg_done, __ATOMIC_SEQ_CST);
	}
	if (n >= fg->procs * fg->threads)
		__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
}

static void fg_done(struct task_ctx *c)
{
	if (c->cfg->mode != MODE_COMBINED || c->g->until_fg_done)
		return;
	__atomic_add_fetch(&c->sh->proc[c->pidx].fg_done, 1, __ATOMIC_SEQ_CST);
	fg_check_stop(c->cfg, c->sh);
}

/*
 * --thp-holes: give the last 2 MiB range of every thp_holes 4 KiB pages, as
 * when the kernel could not allocate a THP there at first touch. A read of
 * its first page while the area is MADV_NOHUGEPAGE maps the zero page and
 * gives the range a page table, so that no fault can map a THP there after
 * MADV_HUGEPAGE (which also merges the area back into one VMA, as THP
 * readahead needs). Nothing is written: pass 0 still writes every page
 * first. khugepaged may collapse such a range later, as it would any.
 */
static void make_thp_holes(const struct sb_config *cfg, uintptr_t base,
			   uint64_t size)
{
	uint64_t r, ranges = size / SB_HPAGE;

	if (madvise((void *)base, size, MADV_NOHUGEPAGE)) {
		fprintf(stderr, "swapbench: madvise: %s\n", strerror(errno));
		return;
	}
	for (r = cfg->thp_holes - 1; r < ranges; r += cfg->thp_holes)
		(void)*(volatile const char *)(base + r * SB_HPAGE);
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
	if (cfg->thp_holes)
		make_thp_holes(cfg, base, size);
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

/* @fork: found by the --fork-share verifier, kept apart */
static void note_mismatch(struct task_ctx *c, uint64_t page, uint64_t pass,
			  uint64_t off, uint64_t expected, uint64_t found,
			  unsigned int nbad, bool fork)
{
	struct sb_task *t = c->t;
	struct mismatch m = {
		.addr = t->base + page * c->cfg->page_size + off,
		.page = page,
		.offset = off,
		.pass = pass,
		.expected = expected,
		.found = found,
		.nbad = nbad,
	};
	uint64_t *count = fork ? &t->fork_mismatches : &t->mismatches;
	unsigned int *n = fork ? &t->fork_nmis : &t->nmis;

	++*count;
	if (*n < SB_TASK_MIS)
		(fork ? t->fork_mis : t->mis)[(*n)++] = m;
	if (*count <= MIS_PRINT_MAX)
		mismatch_print(&c->cfg->skey, c->idx, &m, fork);
}

/*
 * One page checked: its old head @head (expected @eh) and @nbad bad
 * sector words, the first of them sector @bad holding @found (the page's
 * expected base @eb, or zero if @zero).  A bad page is one mismatch,
 * reported at its first bad word.
 */
static inline void page_checked(struct task_ctx *c, uint64_t page,
				uint64_t pass, uint64_t head, uint64_t eh,
				unsigned int nbad, unsigned int bad,
				uint64_t found, uint64_t eb, bool zero,
				bool fork)
{
	const struct stamp_key *k = &c->cfg->skey;

	if (fork)
		c->t->fork_verified_pages++;
	else
		c->t->verified_pages++;
	if (__builtin_expect(head != eh, 0))
		note_mismatch(c, page, pass, 0, eh, head, nbad + 1, fork);
	else if (__builtin_expect(nbad != 0, 0))
		note_mismatch(c, page, pass, stamp_word(k, bad) * 8,
			      zero ? 0 : stamp_sector(k, eb, bad), found, nbad,
			      fork);
}

/*
 * --survive-sigbus: a swap-in the kernel could not read (the device
 * failed the read) ends in a SIGBUS at the page, on every touch, for as
 * long as its swap entry lives.  The handler discards the page
 * (MADV_DONTNEED frees the entry) and returns: the touch is retried on a
 * new zero page, and the task counts the page lost and writes it anew.
 * A SIGBUS anywhere else, or at the same page again before the task saw
 * the first, takes the default action: the process is io-killed.
 */
static __thread uintptr_t guard_lo, guard_hi;	/* the area being touched */
static __thread volatile sig_atomic_t io_lost;
static __thread uintptr_t lost_at;
static uintptr_t page_mask;

static void sigbus_lose_page(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr & page_mask;

	(void)uc;
	if (si->si_code > 0 && a >= guard_lo && a < guard_hi &&
	    !(io_lost && a == lost_at) &&
	    !madvise((void *)a, ~page_mask + 1, MADV_DONTNEED)) {
		lost_at = a;
		io_lost = 1;
		return;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static int survive_sigbus_install(const struct sb_config *cfg)
{
	struct sigaction sa = {
		.sa_sigaction = sigbus_lose_page,
		.sa_flags = SA_SIGINFO,
	};

	page_mask = ~(uintptr_t)(cfg->page_size - 1);
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, NULL);
}

static void guard_area(const struct task_ctx *c)
{
	guard_lo = (uintptr_t)c->base;
	guard_hi = guard_lo + c->npages * c->cfg->page_size;
}

/* did the touch of the last page meet a page lost to a read error? */
static inline bool page_was_lost(struct task_ctx *c, bool fork)
{
	if (__builtin_expect(!io_lost, 1))
		return false;
	io_lost = 0;
	if (fork)
		c->t->fork_lost_pages++;
	else
		c->t->lost_pages++;
	return true;
}

/*
 * Write a lost page's stamps again: a SIGBUS halfway through the touch
 * (the page went out again and failed to come back) lost what the touch
 * had written before it.
 */
static void page_rewrite(const struct stamp_key *k, uint64_t *p,
			 uint64_t head, uint64_t base)
{
	*(volatile uint64_t *)p = head;
	stamp_write(k, p, base);
}

/* the SIGBUS of a failed swap-in of page @p, as the kernel sends it */
static void send_lost_sigbus(void *p)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = SIGBUS;
	si.si_code = BUS_ADRERR;
	si.si_addr = p;
	syscall(SYS_rt_tgsigqueueinfo, getpid(), (pid_t)syscall(SYS_gettid),
		SIGBUS, &si);
}

/* what the kernel does to a process whose swap-in read fails */
static void raise_sigbus(void)
{
	struct rlimit no_core = { 0, 0 };

	/* no core file, nor a core_pattern pipe helper, for a test */
	setrlimit(RLIMIT_CORE, &no_core);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	raise(SIGBUS);
}

static void test_hooks(struct task_ctx *c, uint64_t page, uint64_t pass,
		       uint64_t *p)
{
	const struct sb_config *cfg = c->cfg;

	if (pass == 0 && (int64_t)page == cfg->corrupt_page) {
		/* one byte of the page goes bad after it was written */
		((volatile unsigned char *)p)[cfg->corrupt_offset] ^= 0xff;
	}
	if (pass == 0 && (int64_t)page == cfg->kill_page)
		kill(getpid(), SIGKILL);
	if (pass == cfg->sigbus_pass && (int64_t)page == cfg->sigbus_page)
		raise_sigbus();
}

static bool should_stop(struct task_ctx *c, uint64_t pass)
{
	if (c->g->until_fg_done && pass > 0 &&
	    __atomic_load_n(&c->sh->stop, __ATOMIC_ACQUIRE))
		return true;
	return c->deadline && now_ns() >= c->deadline;
}

/*
 * Check page @page at @p, whose head word read @head, against the stamps
 * pass @pass left, without writing (all zero if @zero: never written).
 */
static void check_stamps(struct task_ctx *c, uint64_t page,
			 const uint64_t *p, uint64_t head, uint64_t pass,
			 bool zero, bool fork)
{
	const struct stamp_key *k = &c->cfg->skey;
	uint64_t eh = zero ? 0 : stamp_head(k, page, pass);
	uint64_t eb = zero ? 0 : stamp_base(k, page, pass), found = 0;
	unsigned int bad = 0, nbad;

	nbad = stamp_check(k, p, eb, zero, &bad, &found);
	page_checked(c, page, pass, head, eh, nbad, bad, found, eb, zero,
		     fork);
}

/* one pass; false if it was cut short */
static bool run_pass(struct task_ctx *c, uint64_t pass)
{
	const struct sb_config *cfg = c->cfg;
	const struct stamp_key *k = &cfg->skey;
	struct sb_task *t = c->t;
	bool record = cfg->latency && pass >= cfg->warmup_passes;
	bool check = cfg->verify && pass > 0;
	bool reread = cfg->reread && pass > 0;
	bool hooks = c->idx == 0 &&
		     ((pass == 0 && (cfg->corrupt_page >= 0 ||
				     cfg->kill_page >= 0)) ||
		      (pass == cfg->sigbus_pass && cfg->sigbus_page >= 0));
	bool lost_hook = c->idx == 0 && pass == cfg->sigbus_pass &&
			 cfg->lost_page >= 0;
	uint64_t psz = cfg->page_size, page, n = 0;
	uint64_t t0 = 0, t1 = 0;
	struct order o;

	order_init(&o, c->g->pattern, c->npages, cfg->step, cfg->seed,
		   c->idx, pass);
	c->last_pass = pass;
	c->last_pos = 0;
	c->started = true;
	guard_area(c);
	while (order_next(&o, &page)) {
		uint64_t *p = (uint64_t *)(c->base + page * psz);
		uint64_t nh = stamp_head(k, page, pass);
		uint64_t nb = stamp_base(k, page, pass);
		uint64_t old = 0;

		if (__builtin_expect(lost_hook, 0) &&
		    (int64_t)page == cfg->lost_page)
			send_lost_sigbus(p);

		/* the first touch of the page: the access that may fault */
		if (record)
			t0 = now_ns();
		if (reread)
			old = *(volatile uint64_t *)p;
		else if (check)
			old = __atomic_exchange_n(p, nh, __ATOMIC_RELAXED);
		else
			*(volatile uint64_t *)p = nh;
		if (record) {
			t1 = now_ns();
			hist_add(&t->hist, t1 - t0);
		}
		if (reread) {
			if (check)	/* pass 0 wrote every page */
				check_stamps(c, page, p, old, 0, false,
					     false);
		} else if (check) {
			uint64_t ob = stamp_base(k, page, pass - 1), found = 0;
			unsigned int bad = 0, nbad;

			nbad = stamp_swap(k, p, ob, nb, &bad, &found);
			if (page_was_lost(c, false))
				page_rewrite(k, p, nh, nb);
			else
				page_checked(c, page, pass - 1, old,
					     stamp_head(k, page, pass - 1),
					     nbad, bad, found, ob, false,
					     false);
		} else {
			stamp_write(k, p, nb);
			if (cfg->fill_words)
				page_fill(k, p, nb, cfg->fill_words);
			if (page_was_lost(c, false))
				page_rewrite(k, p, nh, nb);
		}
		if (__builtin_expect(hooks, 0))
			test_hooks(c, page, pass, p);
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

/*
 * --fork-share: wait here until every thread of the process is here and
 * the main thread has forked the verifier (fork_verifier()), so that the
 * verifier's copy of every area and of every task's progress is taken
 * at rest.  The wait is left out of the task's elapsed time.
 */
static void fork_meet(struct task_ctx *c)
{
	struct fork_meet *m = c->meet;
	uint64_t t0;

	if (!m || c->met)
		return;
	c->met = true;
	t0 = now_ns();
	pthread_mutex_lock(&m->lock);
	m->arrived++;
	pthread_cond_broadcast(&m->cond);
	while (!m->released)
		pthread_cond_wait(&m->cond, &m->lock);
	pthread_mutex_unlock(&m->lock);
	c->t->excluded_ns += now_ns() - t0;
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
			/* cut short: task_thread() meets right after us */
			if (pass == 0)
				first_pass_done(c);
			break;
		}
		c->t->passes++;
		if (pass == 0) {
			first_pass_done(c);
			area_sample(c, true);
		}
		if (pass == cfg->fork_pass)
			fork_meet(c);
	}
}

/*
 * Read every page back in the order of the last pass and check the
 * stamps it left: after the run (final sweep), or in the --fork-share
 * verifier (@fork) with the progress copied at the fork.
 */
static void sweep(struct task_ctx *c, bool fork)
{
	const struct sb_config *cfg = c->cfg;
	uint64_t psz = cfg->page_size, page, i = 0, p = c->last_pass;
	uint64_t t0 = now_ns();
	struct order o;

	if (!c->started)
		return;
	guard_area(c);
	order_init(&o, c->g->pattern, c->npages, cfg->step, cfg->seed,
		   c->idx, p);
	while (order_next(&o, &page)) {
		const uint64_t *pg = (const uint64_t *)(c->base + page * psz);
		uint64_t h = *(const volatile uint64_t *)pg;
		/* never written (pass 0 cut short): must still read as zero */
		bool zero = i >= c->last_pos && p == 0;
		/* the pass that wrote it; with --reread only pass 0 wrote */
		uint64_t q = cfg->reread || zero ? 0 :
			     (i < c->last_pos ? p : p - 1);

		if (!page_was_lost(c, fork))
			check_stamps(c, page, pg, h, q, zero, fork);
		i++;
	}
	if (fork) {
		c->t->fork_ns = now_ns() - t0;
	} else {
		c->t->final_pages = i;
		c->t->final_t0 = t0;
		c->t->final_ns = now_ns() - t0;
	}
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
	barrier_wait(cfg, c->sh, c->pidx, 0);
	if (err)
		fork_meet(c);	/* nothing to verify, but expected there */
	if (!err) {
		getrusage(RUSAGE_THREAD, &r0);
		c->cpu0 = thread_cpu_ns();
		t->t_start = now_ns();
		if (cfg->runtime_ns)
			c->deadline = t->t_start + cfg->runtime_ns;
		run_main(c);
		/* a no-op if run_main() met after pass fork_pass */
		fork_meet(c);
		t->t_end = now_ns();
		t->cpu_ns = thread_cpu_ns() - c->cpu0;
		getrusage(RUSAGE_THREAD, &r1);
		t->minflt = (uint64_t)(r1.ru_minflt - r0.ru_minflt);
		t->majflt = (uint64_t)(r1.ru_majflt - r0.ru_majflt);
		area_sample(c, false);
	}
	fg_done(c);
	barrier_wait(cfg, c->sh, c->pidx, 1);
	if (!err && cfg->final_verify) {
		if (cfg->serial_final)
			sweep_wait_turn(c);
		sweep(c, false);
	}
	sweep_done(t);
	if (!err)
		t->status = t->mismatches ? ST_MISMATCH : ST_OK;
	return NULL;
}

/*
 * --fork-share, in the forked verifier: sweep every area as the last pass
 * left it at the fork.  The areas are shared copy-on-write with the
 * process (with their swap entries, if they are out), which goes on with
 * its passes meanwhile.  The verifier dies with the process.
 */
static void __attribute__((noreturn))
fork_child(struct task_ctx *ctx, unsigned int n, pid_t ppid)
{
	uint64_t mis = 0;
	unsigned int j;

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != ppid)
		_exit(EXIT_ERROR);
	for (j = 0; j < n; j++) {
		if (!ctx[j].started)
			continue;
		sweep(&ctx[j], true);
		mis += ctx[j].t->fork_mismatches;
	}
	_exit(mis ? EXIT_MISMATCH : EXIT_OK);
}

/*
 * The main thread: wait until the @running threads (of @n) have met after
 * pass fork_pass, fork the verifier, let them go on.
 */
static pid_t fork_verifier(struct fork_meet *m, struct task_ctx *ctx,
			   unsigned int n, unsigned int running,
			   struct sb_pstate *ps)
{
	pid_t self = getpid(), pid;

	pthread_mutex_lock(&m->lock);
	while (m->arrived < running)
		pthread_cond_wait(&m->cond, &m->lock);
	pid = fork();
	if (pid == 0)
		fork_child(ctx, n, self);
	if (pid < 0) {
		ps->fork_status = errno == ENOMEM ? ST_ENOMEM : ST_ERROR;
		fprintf(stderr, "swapbench: process %d: fork-share fork: %s\n",
			self, strerror(errno));
	} else {
		ps->fork_pid = pid;
		ps->fork_status = ST_RUNNING;
	}
	m->released = true;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	return pid;
}

/* reap the verifier; its status */
static int fork_reap(const struct sb_config *cfg, pid_t pid,
		     struct sb_pstate *ps)
{
	int wst, st;

	while (waitpid(pid, &wst, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "swapbench: waiting for the fork-share "
				"child %d: %s\n", pid, strerror(errno));
			return ps->fork_status = ST_ERROR;
		}
	}
	if (WIFSIGNALED(wst)) {
		int sig = WTERMSIG(wst);

		st = sig == SIGBUS && cfg->survive_sigbus ? ST_IO_KILLED :
		     sig == SIGKILL ? ST_OOM : ST_CRASH;
		ps->fork_signal = sig;
		fprintf(stderr, "swapbench: fork-share child %d of process "
			"%d killed by signal %d%s\n", pid, getpid(), sig,
			st == ST_IO_KILLED ? " (swap read error?), going on" :
			sig == SIGKILL ? " (OOM kill?)" : "");
	} else {
		st = status_of_exit(WEXITSTATUS(wst));
	}
	return ps->fork_status = st;
}

/* nothing will run: count the process's tasks in at the barriers */
static void arrive_all(const struct sb_config *cfg, struct sb_shared *sh,
		       const struct sb_group *g, unsigned int pidx)
{
	unsigned int j;

	for (j = 0; j < g->threads; j++) {
		barrier_arrive(sh, pidx, 0);
		barrier_arrive(sh, pidx, 1);
		sweep_done(&sh->task[g->first_task +
				     (pidx - g->first_proc) * g->threads + j]);
	}
	if (cfg->mode == MODE_COMBINED && !g->until_fg_done) {
		__atomic_add_fetch(&sh->proc[pidx].fg_done, g->threads,
				   __ATOMIC_SEQ_CST);
		fg_check_stop(cfg, sh);
	}
}

int child_main(const struct sb_config *cfg, struct sb_shared *sh,
	       unsigned int group, unsigned int proc)
{
	const struct sb_group *g = &cfg->grp[group];
	unsigned int j, created = 0, pidx = g->first_proc + proc;
	struct sb_pstate *ps = &sh->proc[pidx];
	struct fork_meet meet = {
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
	};
	struct task_ctx *ctx;
	pthread_t *tid;
	pthread_attr_t attr;
	pid_t fork_pid = -1;
	int worst = ST_OK;
	bool *live;

	ctx = calloc(g->threads, sizeof(*ctx));
	tid = calloc(g->threads, sizeof(*tid));
	live = calloc(g->threads, sizeof(*live));
	if (!ctx || !tid || !live) {
		free(ctx);
		free(tid);
		free(live);
		arrive_all(cfg, sh, g, pidx);
		return EXIT_ERROR;	/* the parent sees a bad exit */
	}
	if (cfg->survive_sigbus && survive_sigbus_install(cfg))
		fprintf(stderr, "swapbench: process %d: SIGBUS handler: %s\n",
			getpid(), strerror(errno));
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1 << 20);
	for (j = 0; j < g->threads; j++) {
		struct task_ctx *c = &ctx[j];

		c->cfg = cfg;
		c->sh = sh;
		c->g = g;
		c->meet = cfg->fork_share ? &meet : NULL;
		c->idx = g->first_task + proc * g->threads + j;
		c->pidx = pidx;
		c->t = &sh->task[c->idx];
		if (pthread_create(&tid[j], &attr, task_thread, c)) {
			c->t->status = ST_ERROR;
			c->t->err = EAGAIN;
			fg_done(c);
			barrier_arrive(sh, pidx, 0);
			barrier_arrive(sh, pidx, 1);
			sweep_done(c->t);
			continue;
		}
		live[j] = true;
		created++;
	}
	if (cfg->fork_share && created)
		fork_pid = fork_verifier(&meet, ctx, g->threads, created,
					 ps);
	/* reap the verifier as soon as it is done, then join the threads */
	if (fork_pid > 0) {
		int st = fork_reap(cfg, fork_pid, ps);

		/* an io-killed verifier is reported, not a failure */
		if (st != ST_IO_KILLED && st > worst)
			worst = st;
	} else if (ps->fork_status > worst) {
		worst = ps->fork_status;	/* the fork failed */
	}
	for (j = 0; j < g->threads; j++)
		if (live[j])
			pthread_join(tid[j], NULL);
	for (j = 0; j < g->threads; j++) {
		struct sb_task *t = ctx[j].t;
		int st;

		if (t->fork_mismatches)
			t->status = ST_MISMATCH;
		st = t->status;
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
