// SPDX-License-Identifier: GPL-2.0
/*
 * swaprace: swap-in against concurrent page-table changes, for the
 * swaplab guests.
 *
 * Each process maps an anonymous area of whole 2 MiB ranges (MADV_HUGEPAGE
 * or MADV_NOHUGEPAGE), stamps every page (verify.h) and so pushes most of
 * it out to swap.  Then, for --runtime seconds, faulter threads read and
 * rewrite the pages of random 2 MiB ranges, checking each, while mutator
 * threads change random ranges and sub-ranges of the same area under
 * them: MADV_DONTNEED, munmap + mmap MAP_FIXED, mprotect PROT_READ and
 * back, MADV_PAGEOUT and fork (the child checks and rewrites a sample of
 * the pages it shares copy-on-write).  A final sweep checks every page.
 *
 * What each page must hold is its state word: a generation and whether
 * it must read as zero (after a zap), with a busy bit that whoever
 * touches or changes the page holds.  A sub-range zap holds the busy bits
 * of its own pages only, so faults on the rest of the 2 MiB range (a THP
 * swapped in whole, say) race with it, and a correct kernel can never
 * make a page differ from its word.  README.md, "swaprace", has the
 * details, the JSON and the exit codes.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jw.h"
#include "procfs.h"
#include "swaprace.h"
#include "sysinfo.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

/* the page state word */
#define PG_BUSY		(1U << 31)	/* someone is at the page */
#define PG_ZERO		(1U << 30)	/* must read as zero */
#define PG_BAD		(1U << 29)	/* a mismatch was counted already */
#define PG_CHILD	(1U << 28)	/* a fork child's stamp (its copy) */
#define PG_GEN		(PG_CHILD - 1)	/* generation of its stamps */

/* stamp identity: process, page, and whether a fork child wrote it */
#define ID_PROC_SHIFT	36
#define ID_CHILD	(1ULL << 47)

#define FAULT_WINDOW	64	/* pages a faulter visits per range lock */
#define REMAP_TRIES	100
#define CHILD_PAUSE_NS	10000000L

struct range {
	pthread_rwlock_t lock;	/* mutators changing protections: write */
	int ro;			/* PROT_READ now: faulters only read */
};

/* one process's area and what its threads share */
struct area {
	const struct race_config *cfg;
	struct race_proc *rp;	/* its results, shared with the parent */
	unsigned int proc;
	char *base;
	uint64_t npages;
	uint64_t nranges;
	uint64_t ppr;		/* pages per 2 MiB range */
	uint32_t *state;	/* one word per page */
	struct range *range;
	/* mutator operations: read; fork: write (no change in flight) */
	pthread_rwlock_t ops_lock;
	int64_t keep_range;	/* --corrupt-page's range, -1: none */
	uint64_t deadline;
	uint64_t fork_seq;
	uint64_t walk_next;	/* --walk seq: the faulters' next range */
};

struct thread {
	struct area *a;
	pthread_t tid;
	unsigned int index;
	bool mutator;
	uint64_t rng;
	struct race_count c;
};

static const char *const who_names[] = {
	[BY_FAULTER] = "faulter",
	[BY_MUTATOR] = "mutator",
	[BY_FINAL] = "final",
	[BY_FORK_CHILD] = "fork-child",
	[BY_FORK_PARENT] = "fork-parent",
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(uint64_t *st)
{
	return splitmix64(st);
}

static uint64_t rnd_below(uint64_t *st, uint64_t n)
{
	return rnd(st) % n;
}

static bool stopped(const struct area *a)
{
	return now_ns() >= a->deadline;
}

static uint64_t *page_ptr(const struct area *a, uint64_t pg)
{
	return (uint64_t *)(a->base + pg * a->cfg->page_size);
}

static uint64_t page_id(const struct area *a, uint64_t pg)
{
	return ((uint64_t)a->proc << ID_PROC_SHIFT) | pg;
}

/* the first failure of the process, for the JSON */
static void note_error(struct area *a, const char *what, int err)
{
	char buf[sizeof(a->rp->error)];

	if (err)
		snprintf(buf, sizeof(buf), "%s: %s", what, strerror(err));
	else
		snprintf(buf, sizeof(buf), "%s", what);
	fprintf(stderr, "swaprace: process %u: %s\n", a->proc, buf);
	if (!a->rp->error[0])
		memcpy(a->rp->error, buf, sizeof(buf));
}

/*
 * Mismatch output from any thread, or from a fork child: formatted on the
 * stack and written at once (no stdio locks, which a child forked from a
 * threaded process must not take).
 */
static void mis_print(const struct area *a, const struct race_mis *m)
{
	char line[320];
	int n;

	n = snprintf(line, sizeof(line),
		     "swaprace: MISMATCH proc %u (%s) page %" PRIu64
		     " addr 0x%" PRIx64 " offset %" PRIu64 " gen %" PRIu64
		     "%s: expected 0x%016" PRIx64 " found 0x%016" PRIx64
		     "; %u of %u stamp words bad\n", a->proc,
		     who_names[m->who], m->page, m->addr, m->offset, m->gen,
		     m->zero ? " (zero)" : "", m->expected, m->found, m->nbad,
		     a->cfg->skey.nsec);
	if (n > 0 && write(2, line, (size_t)n) < 0)
		return;		/* nowhere left to tell */
}

static void mis_record(struct area *a, const struct race_mis *m)
{
	struct race_proc *rp = a->rp;
	unsigned int slot;

	if (m->who == BY_FORK_CHILD)
		__atomic_add_fetch(&rp->fork_mismatches, 1, __ATOMIC_SEQ_CST);
	else
		__atomic_add_fetch(&rp->mismatches, 1, __ATOMIC_SEQ_CST);
	slot = __atomic_fetch_add(&rp->nmis, 1, __ATOMIC_SEQ_CST);
	if (slot < RACE_PROC_MIS)
		rp->mis[slot] = *m;
	else
		__atomic_store_n(&rp->nmis, RACE_PROC_MIS, __ATOMIC_SEQ_CST);
	mis_print(a, m);
}

/*
 * Check page @pg against state word @w (busy or not), with the stamp
 * identity @id.  True if it holds what @w says.  A mismatch is recorded
 * unless @w says one was counted for the page already.  With @new_head
 * the head word is read by exchanging it for *@new_head: the first access
 * is then a write, so a page that must read as zero gets a page of its
 * own (in a 2 MiB range with nothing mapped, a THP) rather than the
 * shared zero page, which a write after the read would split again.
 */
static bool check_page(struct area *a, uint64_t pg, uint32_t w, uint64_t id,
		       int who, const uint64_t *new_head)
{
	const struct stamp_key *k = &a->cfg->skey;
	volatile uint64_t *p = page_ptr(a, pg);
	bool zero = w & PG_ZERO;
	uint64_t gen = w & PG_GEN;
	uint64_t head = zero ? 0 : stamp_head(k, id, gen);
	uint64_t base = stamp_base(k, id, gen), wfound = 0, found;
	unsigned int bad = 0, nbad;
	struct race_mis m;

	if (new_head)
		found = __atomic_exchange_n((uint64_t *)p, *new_head,
					    __ATOMIC_RELAXED);
	else
		found = p[0];

	nbad = stamp_check(k, (const uint64_t *)p, base, zero, &bad, &wfound);
	if (found == head && !nbad)
		return true;
	if (w & PG_BAD)
		return false;
	memset(&m, 0, sizeof(m));
	m.page = pg;
	m.gen = gen;
	m.zero = zero;
	m.who = who;
	m.nbad = nbad + (found != head);
	if (found != head) {
		m.offset = 0;
		m.expected = head;
		m.found = found;
	} else {
		m.offset = stamp_word(k, bad) * 8;
		m.expected = zero ? 0 : stamp_sector(k, base, bad);
		m.found = wfound;
	}
	m.addr = (uint64_t)(uintptr_t)p + m.offset;
	mis_record(a, &m);
	return false;
}

/* write generation @gen's stamps into page @pg */
static void stamp_page(struct area *a, uint64_t pg, uint64_t id, uint64_t gen)
{
	const struct stamp_key *k = &a->cfg->skey;
	volatile uint64_t *p = page_ptr(a, pg);

	stamp_write(k, (uint64_t *)p, stamp_base(k, id, gen));
	p[0] = stamp_head(k, id, gen);
}

/* the next generation: stamps never repeat on a page */
static uint32_t next_gen(uint32_t w)
{
	uint32_t gen = (w & PG_GEN) + 1;

	return gen > PG_GEN ? 1 : gen;
}

static bool page_trylock(struct area *a, uint64_t pg, uint32_t *w)
{
	uint32_t old = __atomic_load_n(&a->state[pg], __ATOMIC_ACQUIRE);

	do {
		if (old & PG_BUSY)
			return false;
	} while (!__atomic_compare_exchange_n(&a->state[pg], &old,
					      old | PG_BUSY, false,
					      __ATOMIC_ACQUIRE,
					      __ATOMIC_ACQUIRE));
	*w = old;
	return true;
}

static uint32_t page_lock(struct area *a, uint64_t pg)
{
	uint32_t w;

	while (!page_trylock(a, pg, &w))
		sched_yield();
	return w;
}

static void page_unlock(struct area *a, uint64_t pg, uint32_t w)
{
	__atomic_store_n(&a->state[pg], w & ~PG_BUSY, __ATOMIC_RELEASE);
}

/* check a page held busy (word @w); rewrite it if @write; the new word */
static uint32_t touch_page(struct thread *t, uint64_t pg, uint32_t w,
			   bool write, int who)
{
	struct area *a = t->a;
	const struct stamp_key *k = &a->cfg->skey;
	uint64_t id = page_id(a, pg);
	uint32_t nw = next_gen(w);	/* clears ZERO and BAD */
	uint64_t head = stamp_head(k, id, nw);

	t->c.verified++;
	if (!check_page(a, pg, w, id, who, write ? &head : NULL))
		w |= PG_BAD;
	if (!write)
		return w;
	/* the head is written already */
	stamp_write(k, page_ptr(a, pg), stamp_base(k, id, nw));
	t->c.written++;
	return nw;
}

static void range_rdlock(struct area *a, uint64_t r)
{
	pthread_rwlock_rdlock(&a->range[r].lock);
}

static void range_wrlock(struct area *a, uint64_t r)
{
	pthread_rwlock_wrlock(&a->range[r].lock);
}

static void range_unlock(struct area *a, uint64_t r)
{
	pthread_rwlock_unlock(&a->range[r].lock);
}

/*
 * Faulters: a window of pages of a range, under the range's read lock,
 * each page checked under its busy bit (skipped while a mutator or
 * another faulter has it) and rewritten now and then.  The first touch of
 * a range swapped out whole is what swaps a THP in.  The range is a
 * random one, or with --walk seq the next in order, the faulters taking
 * turns: a kernel that reads a range whole only when the VMA's last swap
 * fault was in it or next to it (beyond-6.12) never does for random
 * ranges, nor for faulters walking apart in one VMA.
 */
static void faulter(struct thread *t)
{
	struct area *a = t->a;
	unsigned int wpct = a->cfg->write_pct;

	while (!stopped(a)) {
		uint64_t i, r, start = rnd_below(&t->rng, a->ppr);
		bool ro;

		if (a->cfg->walk_seq)
			r = __atomic_fetch_add(&a->walk_next, 1,
					       __ATOMIC_RELAXED) % a->nranges;
		else
			r = rnd_below(&t->rng, a->nranges);
		range_rdlock(a, r);
		ro = __atomic_load_n(&a->range[r].ro, __ATOMIC_ACQUIRE);
		for (i = 0; i < FAULT_WINDOW; i++) {
			uint64_t pg = r * a->ppr + (start + i) % a->ppr;
			uint32_t w;
			bool write;

			if (!page_trylock(a, pg, &w)) {
				t->c.busy_skips++;
				continue;
			}
			write = !ro && rnd_below(&t->rng, 100) < wpct;
			w = touch_page(t, pg, w, write, BY_FAULTER);
			page_unlock(a, pg, w);
		}
		range_unlock(a, r);
	}
}

static int thp_advice(const struct area *a)
{
	return a->cfg->nohuge ? MADV_NOHUGEPAGE : MADV_HUGEPAGE;
}

/*
 * After a zap of [pg0, pg0 + n), held busy: every page must read as
 * zero.  The mutator checks that and stamps the pages anew at once
 * (unless the range is read-only): always for a whole range, whose first
 * write fault maps a new THP, so the range can go out and come back whole
 * again; half the time for a sub-range, the other half it leaves the
 * pages for the faulters to find zero.
 */
static void after_zap(struct thread *t, uint64_t r, uint64_t pg0, uint64_t n,
		      uint32_t *w)
{
	struct area *a = t->a;
	bool ro = __atomic_load_n(&a->range[r].ro, __ATOMIC_ACQUIRE);
	bool now = n == a->ppr || (rnd(&t->rng) & 1);
	uint64_t i;

	for (i = 0; i < n; i++) {
		w[i] = (w[i] & PG_GEN) | PG_ZERO | PG_BUSY;
		if (now)
			w[i] = touch_page(t, pg0 + i, w[i], !ro, BY_MUTATOR);
	}
}

/* mmap MAP_FIXED over [p, p + len) again, retried: 0 or an errno */
static int remap(struct thread *t, char *p, size_t len, int prot)
{
	struct timespec pause = { 0, 10000000L };
	int i, err = 0;

	if (munmap(p, len))
		return errno;
	for (i = 0; i < REMAP_TRIES; i++) {
		if (mmap(p, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			 -1, 0) == p)
			break;
		err = errno;
		nanosleep(&pause, NULL);
	}
	if (i == REMAP_TRIES)
		return err;
	if (madvise(p, len, thp_advice(t->a)) && errno != EINVAL)
		t->c.errors++;
	return 0;
}

/*
 * MADV_DONTNEED or munmap + mmap of pages [pg0, pg0 + n) of range @r, a
 * sub-range or all of it: under the range's read lock, with the busy
 * bits of those pages only, so faults on the rest of the range go on.
 */
static void zap(struct thread *t, enum race_op op, uint64_t r, uint64_t pg0,
		uint64_t n)
{
	struct area *a = t->a;
	char *p = (char *)page_ptr(a, pg0);
	size_t len = n * a->cfg->page_size;
	uint32_t w[RACE_HPAGE / 512];
	uint64_t i;
	int err = 0;

	range_rdlock(a, r);
	for (i = 0; i < n; i++)		/* ascending: no deadlock */
		w[i] = page_lock(a, pg0 + i);
	if (op == OP_DONTNEED) {
		if (madvise(p, len, MADV_DONTNEED))
			err = errno;
	} else {
		bool ro = __atomic_load_n(&a->range[r].ro, __ATOMIC_ACQUIRE);

		err = remap(t, p, len, ro ? PROT_READ :
			    PROT_READ | PROT_WRITE);
		if (err) {
			/* a hole in the area: nothing can go on */
			note_error(a, "mmap MAP_FIXED", err);
			_exit(EXIT_ERROR);
		}
	}
	if (err) {
		t->c.errors++;
		note_error(a, "madvise MADV_DONTNEED", err);
	} else {
		after_zap(t, r, pg0, n, w);
		if (n == a->ppr)
			t->c.ops[op]++;
		else
			t->c.sub_ops[op]++;
	}
	for (i = 0; i < n; i++)
		page_unlock(a, pg0 + i, w[i]);
	range_unlock(a, r);
}

/*
 * mprotect PROT_READ of the range or a sub-range, the faulters reading it
 * meanwhile (the range's `ro` tells them not to write), then the whole
 * range PROT_READ | PROT_WRITE again.  The flag changes under the range's
 * write lock, so no faulter is between its check and its write.
 */
static void protect(struct thread *t, uint64_t r, uint64_t pg0, uint64_t n)
{
	struct area *a = t->a;
	char *p = (char *)page_ptr(a, pg0);
	char *rbase = (char *)page_ptr(a, r * a->ppr);
	uint64_t i, start = rnd_below(&t->rng, a->ppr);
	int err = 0;

	range_wrlock(a, r);
	if (a->range[r].ro) {		/* another mutator's */
		range_unlock(a, r);
		return;
	}
	if (mprotect(p, n * a->cfg->page_size, PROT_READ))
		err = errno;
	else
		__atomic_store_n(&a->range[r].ro, 1, __ATOMIC_RELEASE);
	range_unlock(a, r);
	if (err) {
		t->c.errors++;
		note_error(a, "mprotect PROT_READ", err);
		return;
	}
	/* read-only: read a window as the faulters do */
	range_rdlock(a, r);
	for (i = 0; i < FAULT_WINDOW; i++) {
		uint64_t pg = r * a->ppr + (start + i) % a->ppr;
		uint32_t w;

		if (!page_trylock(a, pg, &w))
			continue;
		page_unlock(a, pg, touch_page(t, pg, w, false, BY_MUTATOR));
	}
	range_unlock(a, r);
	range_wrlock(a, r);
	if (mprotect(rbase, RACE_HPAGE, PROT_READ | PROT_WRITE)) {
		/* faulters would write into a read-only range */
		note_error(a, "mprotect PROT_READ|PROT_WRITE", errno);
		_exit(EXIT_ERROR);
	}
	__atomic_store_n(&a->range[r].ro, 0, __ATOMIC_RELEASE);
	range_unlock(a, r);
	if (n == a->ppr)
		t->c.ops[OP_MPROTECT]++;
	else
		t->c.sub_ops[OP_MPROTECT]++;
}

/* MADV_PAGEOUT: push the pages out again; nothing they hold changes */
static void pageout(struct thread *t, uint64_t r, uint64_t pg0, uint64_t n)
{
	struct area *a = t->a;
	int ret;

	if (!__atomic_load_n(&a->rp->pageout, __ATOMIC_ACQUIRE))
		return;
	range_rdlock(a, r);
	ret = madvise(page_ptr(a, pg0), n * a->cfg->page_size, MADV_PAGEOUT);
	range_unlock(a, r);
	if (ret && errno == EINVAL) {	/* before 5.4, or no swap support */
		__atomic_store_n(&a->rp->pageout, 0, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&a->rp->pageout, 1, __ATOMIC_RELEASE);
	/* ENOMEM: a sub-range of it is being mapped again (a hole) */
	if (ret && errno == ENOMEM)
		return;
	if (ret) {
		t->c.errors++;
		note_error(a, "madvise MADV_PAGEOUT", errno);
		return;
	}
	if (n == a->ppr)
		t->c.ops[OP_PAGEOUT]++;
	else
		t->c.sub_ops[OP_PAGEOUT]++;
}

/* the pages fork number @seq samples: child and parent draw the same */
static uint64_t sample_rng(const struct area *a, uint64_t seq)
{
	uint64_t st = a->cfg->seed ^ 0xf0f0f0f0c3c3c3c3ULL;

	st ^= mix64(((uint64_t)a->proc << 32) ^ seq);
	return st;
}

static uint64_t sample_next(const struct area *a, uint64_t *st)
{
	uint64_t pg;

	do {
		pg = rnd_below(st, a->npages);
	} while ((int64_t)(pg / a->ppr) == a->keep_range);
	return pg;
}

/*
 * The fork child: alone in a copy of the process, with the state words
 * as they were when its pages were copied.  A word not busy then is
 * right for its page (changing a page starts by setting the busy bit,
 * which after the copy waits for the fork to end), so: check a sample of
 * pages, stamp every fourth anew in the child's own copy (copy-on-write,
 * with the child's identity), push those out, give the parent's threads
 * time to change their copies, and check the sample again: the child
 * sees its own writes and none of the parent's.
 */
static void __attribute__((noreturn)) fork_child(struct thread *t,
						 uint64_t seq, pid_t parent)
{
	struct area *a = t->a;
	unsigned int i, pass, n = a->cfg->fork_sample;
	struct timespec pause = { 0, CHILD_PAUSE_NS };
	struct race_proc *rp = a->rp;
	uint64_t st, verified = 0, written = 0;
	bool ok = true;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) || getppid() != parent)
		_exit(EXIT_ERROR);
	for (pass = 0; pass < 2; pass++) {
		st = sample_rng(a, seq);
		for (i = 0; i < n; i++) {
			uint64_t pg = sample_next(a, &st), id = page_id(a, pg);
			uint32_t w = a->state[pg];

			if (w & (PG_BUSY | PG_BAD))
				continue;
			if (w & PG_CHILD)
				id |= ID_CHILD;
			verified++;
			if (!check_page(a, pg, w, id, BY_FORK_CHILD, NULL)) {
				a->state[pg] = w | PG_BAD;	/* once */
				ok = false;
				continue;
			}
			if (pass || (i & 3) || a->range[pg / a->ppr].ro)
				continue;
			w = next_gen(w);
			stamp_page(a, pg, page_id(a, pg) | ID_CHILD, w);
			a->state[pg] = w | PG_CHILD;
			written++;
			madvise(page_ptr(a, pg), a->cfg->page_size,
				MADV_PAGEOUT);
		}
		if (!pass)
			nanosleep(&pause, NULL);
	}
	__atomic_add_fetch(&rp->c.fork_verified, verified, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&rp->c.fork_written, written, __ATOMIC_SEQ_CST);
	_exit(ok ? EXIT_OK : EXIT_MISMATCH);
}

/*
 * fork, with no mutator operation in flight (every range mapped, none
 * read-only); the child checks its copy, the parent waits for it and
 * then checks the same pages in its own: the child's writes must not
 * show there.
 */
static void do_fork(struct thread *t)
{
	struct area *a = t->a;
	uint64_t i, st;
	uint64_t seq = __atomic_fetch_add(&a->fork_seq, 1, __ATOMIC_SEQ_CST);
	pid_t pid, self = getpid();
	int wst;

	pthread_rwlock_wrlock(&a->ops_lock);
	pid = fork();
	if (pid == 0)
		fork_child(t, seq, self);
	pthread_rwlock_unlock(&a->ops_lock);
	if (pid < 0) {
		t->c.errors++;
		note_error(a, "fork", errno);
		return;
	}
	while (waitpid(pid, &wst, 0) < 0) {
		if (errno != EINTR) {
			note_error(a, "waitpid", errno);
			_exit(EXIT_ERROR);
		}
	}
	if (WIFSIGNALED(wst)) {
		char what[48];

		snprintf(what, sizeof(what), "fork child killed by signal %d",
			 WTERMSIG(wst));
		note_error(a, what, 0);
		_exit(WTERMSIG(wst) == SIGKILL ? EXIT_OOM : EXIT_CRASH);
	}
	if (WEXITSTATUS(wst) != EXIT_OK && WEXITSTATUS(wst) != EXIT_MISMATCH)
		t->c.errors++;
	t->c.ops[OP_FORK]++;
	st = sample_rng(a, seq);
	for (i = 0; i < a->cfg->fork_sample; i++) {
		uint64_t pg = sample_next(a, &st), r = pg / a->ppr;
		uint32_t w;

		range_rdlock(a, r);
		w = page_lock(a, pg);
		page_unlock(a, pg, touch_page(t, pg, w, false, BY_FORK_PARENT));
		range_unlock(a, r);
	}
}

/* a random range (not --corrupt-page's) and sub-range of it */
static void pick(struct thread *t, uint64_t *r, uint64_t *pg0, uint64_t *n)
{
	struct area *a = t->a;
	uint64_t maxp = a->cfg->sub_max / a->cfg->page_size, k = 0;

	do {
		*r = rnd_below(&t->rng, a->nranges);
	} while ((int64_t)*r == a->keep_range);
	*pg0 = *r * a->ppr;
	*n = a->ppr;
	if (!(rnd(&t->rng) & 3))
		return;			/* a quarter: the whole range */
	while ((2ULL << k) <= maxp)
		k++;
	*n = 1ULL << rnd_below(&t->rng, k + 1);	/* 1 page .. sub_max */
	*pg0 += rnd_below(&t->rng, a->ppr / *n) * *n;
}

/*
 * How often each operation is drawn: a fork a quarter as often as each
 * other, since the mutator waits for its child (without the weights,
 * forks took most of the mutators' time in a guest, and the faults met
 * a tenth of the zaps).
 */
static const unsigned int op_weight[RACE_NOPS] = {
	[OP_DONTNEED] = 4,
	[OP_REMAP] = 4,
	[OP_MPROTECT] = 4,
	[OP_PAGEOUT] = 4,
	[OP_FORK] = 1,
};

#define MENU_MAX (4 * RACE_NOPS)

static void mutator(struct thread *t)
{
	struct area *a = t->a;
	unsigned int ops = a->cfg->ops, nops = 0, i, j;
	enum race_op menu[MENU_MAX] = { OP_DONTNEED };

	for (i = 0; i < RACE_NOPS; i++)
		for (j = 0; ops & (1U << i) && j < op_weight[i]; j++)
			menu[nops++] = i;
	while (!stopped(a)) {
		enum race_op op = menu[rnd_below(&t->rng, nops)];
		uint64_t r, pg0, n;

		if (op == OP_FORK) {
			do_fork(t);
			continue;
		}
		pick(t, &r, &pg0, &n);
		pthread_rwlock_rdlock(&a->ops_lock);
		switch (op) {
		case OP_DONTNEED:
		case OP_REMAP:
			zap(t, op, r, pg0, n);
			break;
		case OP_MPROTECT:
			protect(t, r, pg0, n);
			break;
		default:
			pageout(t, r, pg0, n);
			break;
		}
		pthread_rwlock_unlock(&a->ops_lock);
	}
}

static void count_add(struct race_count *to, const struct race_count *c)
{
	const uint64_t *src = (const uint64_t *)c;
	uint64_t *dst = (uint64_t *)to;
	size_t i;

	for (i = 0; i < sizeof(*c) / sizeof(uint64_t); i++)
		__atomic_add_fetch(&dst[i], src[i], __ATOMIC_SEQ_CST);
}

static void *thread_main(void *arg)
{
	struct thread *t = arg;

	if (t->mutator)
		mutator(t);
	else
		faulter(t);
	count_add(&t->a->rp->c, &t->c);
	return NULL;
}

/* reserve with PROT_NONE guards, 2 MiB aligned; 0 or an errno */
static int area_map(struct area *a)
{
	uint64_t size = a->cfg->size, len = size + 2 * RACE_HPAGE;
	uintptr_t start;
	char *p;

	/*
	 * Not MAP_NORESERVE: the ranges mapped again later must have the
	 * same flags, or they would never merge back into one VMA.
	 */
	p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return errno;
	start = ((uintptr_t)p + 2 * RACE_HPAGE - 1) & ~(RACE_HPAGE - 1);
	if (mprotect((void *)start, size, PROT_READ | PROT_WRITE))
		return errno;
	a->base = (char *)start;
	if (madvise(a->base, size, thp_advice(a)))
		fprintf(stderr, "swaprace: madvise %s: %s (ignored)\n",
			a->cfg->nohuge ? "MADV_NOHUGEPAGE" : "MADV_HUGEPAGE",
			strerror(errno));
	return 0;
}

static int area_init(struct area *a, const struct race_config *cfg,
		     struct race_proc *rp, unsigned int proc)
{
	pthread_rwlockattr_t attr;
	uint64_t r;
	int err;

	memset(a, 0, sizeof(*a));
	a->cfg = cfg;
	a->rp = rp;
	a->proc = proc;
	a->npages = cfg->size / cfg->page_size;
	a->ppr = RACE_HPAGE / cfg->page_size;
	a->nranges = cfg->size / RACE_HPAGE;
	a->keep_range = proc == 0 && cfg->corrupt_page >= 0 ?
			cfg->corrupt_page / (int64_t)a->ppr : -1;
	a->state = calloc(a->npages, sizeof(*a->state));
	a->range = calloc(a->nranges, sizeof(*a->range));
	if (!a->state || !a->range)
		return ENOMEM;
	/* the expectations stay in RAM if they may (best effort) */
	mlock(a->state, a->npages * sizeof(*a->state));
	pthread_rwlockattr_init(&attr);
	/* a mutator or fork waiting for a lock is not starved by faulters */
	pthread_rwlockattr_setkind_np(&attr,
			PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&a->ops_lock, &attr);
	for (r = 0; r < a->nranges; r++)
		pthread_rwlock_init(&a->range[r].lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	err = area_map(a);
	if (err)
		return err;
	rp->base = (uint64_t)(uintptr_t)a->base;
	rp->size = cfg->size;
	return 0;
}

static void area_smaps(const struct area *a, int64_t *huge, int64_t *rss,
		       int64_t *swap)
{
	struct area_info ai;
	uint64_t start = (uint64_t)(uintptr_t)a->base;

	smaps_area(start, start + a->cfg->size, &ai);
	*huge = ai.anon_huge_kb;
	if (rss)
		*rss = ai.rss_kb;
	if (swap)
		*swap = ai.swap_kb;
}

/* stamp generation 1 into every page: most of the area goes to swap */
static void fill(struct area *a)
{
	uint64_t pg;

	for (pg = 0; pg < a->npages; pg++) {
		stamp_page(a, pg, page_id(a, pg), 1);
		a->state[pg] = 1;
	}
	if (a->cfg->corrupt_page >= 0 && a->proc == 0)
		((volatile char *)a->base)[a->cfg->corrupt_page *
					   a->cfg->page_size] ^= 0x01;
}

static void final_sweep(struct thread *t)
{
	struct area *a = t->a;
	uint64_t pg;

	for (pg = 0; pg < a->npages; pg++) {
		a->state[pg] = touch_page(t, pg, a->state[pg], false, BY_FINAL);
		t->c.final_pages++;
	}
	count_add(&a->rp->c, &t->c);
}

/* one process: map, fill, race, sweep; its exit code */
static int proc_main(const struct race_config *cfg, struct race_proc *rp,
		     unsigned int proc)
{
	unsigned int i, nt = cfg->faulters + cfg->mutators;
	struct thread *th = calloc(nt + 1, sizeof(*th));
	struct area a;
	uint64_t t0;
	int err;

	if (!th) {
		note_error(&(struct area){ .rp = rp, .proc = proc },
			   "calloc", ENOMEM);
		return EXIT_ERROR;
	}
	err = area_init(&a, cfg, rp, proc);
	if (err) {
		note_error(&a, "mapping the area", err);
		free(th);
		return err == ENOMEM ? EXIT_ENOMEM : EXIT_ERROR;
	}
	t0 = now_ns();
	fill(&a);
	rp->fill_ns = now_ns() - t0;
	area_smaps(&a, &rp->anon_huge_kb_filled, NULL, NULL);

	t0 = now_ns();
	a.deadline = t0 + cfg->runtime_ns;
	for (i = 0; i <= nt; i++) {
		th[i].a = &a;
		th[i].index = i;
		th[i].mutator = i >= cfg->faulters;
		th[i].rng = mix64(cfg->seed ^ ((uint64_t)proc << 40) ^
				  ((uint64_t)i << 20) ^ 0x5ace5ace);
	}
	for (i = 0; i < nt; i++) {
		err = pthread_create(&th[i].tid, NULL, thread_main, &th[i]);
		if (err) {
			note_error(&a, "pthread_create", err);
			/* the others end at the deadline */
			a.deadline = 0;
			nt = i;
			break;
		}
	}
	for (i = 0; i < nt; i++)
		pthread_join(th[i].tid, NULL);
	rp->race_ns = now_ns() - t0;
	if (err) {
		free(th);
		return EXIT_ERROR;
	}

	t0 = now_ns();
	final_sweep(&th[cfg->faulters + cfg->mutators]);
	rp->final_ns = now_ns() - t0;
	free(th);
	area_smaps(&a, &rp->anon_huge_kb_end, &rp->rss_kb_end,
		   &rp->swap_kb_end);
	if (rp->mismatches || rp->fork_mismatches)
		return EXIT_MISMATCH;
	return rp->error[0] ? EXIT_ERROR : EXIT_OK;
}

static void start_procs(const struct race_config *cfg, struct race_proc *rps)
{
	unsigned int i;

	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < cfg->procs; i++) {
		struct race_proc *rp = &rps[i];
		pid_t pid = fork();

		if (pid == 0) {
			/* the workers go with the parent */
			prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
			_exit(proc_main(cfg, rp, i));
		}
		if (pid < 0) {
			snprintf(rp->error, sizeof(rp->error), "fork: %s",
				 strerror(errno));
			rp->status = ST_ERROR;
			continue;
		}
		rp->pid = pid;
		rp->status = ST_RUNNING;
	}
}

static void wait_procs(const struct race_config *cfg, struct race_proc *rps)
{
	unsigned int i, live = 0;
	struct rusage ru;
	int wst;

	for (i = 0; i < cfg->procs; i++)
		live += rps[i].status == ST_RUNNING;
	while (live) {
		struct race_proc *rp = NULL;
		pid_t pid = wait4(-1, &wst, 0, &ru);

		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (i = 0; i < cfg->procs; i++)
			if (rps[i].pid == pid)
				rp = &rps[i];
		if (!rp)
			continue;
		live--;
		rp->minflt = (uint64_t)ru.ru_minflt;
		rp->majflt = (uint64_t)ru.ru_majflt;
		if (WIFSIGNALED(wst)) {
			rp->signal = WTERMSIG(wst);
			rp->status = rp->signal == SIGKILL ? ST_OOM : ST_CRASH;
			fprintf(stderr, "swaprace: process %d killed by signal "
				"%d%s\n", pid, rp->signal,
				rp->signal == SIGKILL ? " (OOM kill?)" : "");
		} else {
			rp->exit_code = WEXITSTATUS(wst);
			rp->status = status_of_exit(rp->exit_code);
		}
		/* a mismatch found before it died still wins */
		if (rp->mismatches || rp->fork_mismatches)
			rp->status = ST_MISMATCH;
	}
}

static void emit_count(struct jw *w, const struct race_count *c)
{
	char key[32];
	unsigned int i;

	jw_u64(w, "verified_pages", c->verified);
	jw_u64(w, "written_pages", c->written);
	jw_u64(w, "busy_skips", c->busy_skips);
	jw_u64(w, "final_verify_pages", c->final_pages);
	jw_u64(w, "fork_verified_pages", c->fork_verified);
	jw_u64(w, "fork_written_pages", c->fork_written);
	jw_u64(w, "errors", c->errors);
	jw_obj_begin(w, "ops");
	for (i = 0; i < RACE_NOPS; i++) {
		jw_u64(w, race_op_names[i], c->ops[i]);
		if (i == OP_FORK)
			continue;
		snprintf(key, sizeof(key), "%s_sub", race_op_names[i]);
		jw_u64(w, key, c->sub_ops[i]);
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

static void jw_pageout(struct jw *w, int pageout)
{
	if (pageout < 0)
		jw_null(w, "pageout_supported");
	else
		jw_bool(w, "pageout_supported", pageout);
}

static void emit_config(struct jw *w, const struct race_config *cfg)
{
	unsigned int i;

	jw_obj_begin(w, "config");
	jw_u64(w, "seed", cfg->seed);
	jw_u64(w, "procs", cfg->procs);
	jw_u64(w, "faulters", cfg->faulters);
	jw_u64(w, "mutators", cfg->mutators);
	jw_u64(w, "size_per_proc_bytes", cfg->size);
	if (cfg->size_kind == RSIZE_FRAC_MEM)
		jw_dbl(w, "size_frac_mem", cfg->size_arg, 4);
	else
		jw_null(w, "size_frac_mem");
	jw_dbl(w, "runtime_s", (double)cfg->runtime_ns / 1e9, 3);
	jw_str(w, "thp", cfg->nohuge ? "nohuge" : "madvise");
	jw_str(w, "walk", cfg->walk_seq ? "seq" : "random");
	jw_u64(w, "write_pct", cfg->write_pct);
	jw_u64(w, "sub_max_bytes", cfg->sub_max);
	jw_arr_begin(w, "ops");
	for (i = 0; i < RACE_NOPS; i++)
		if (cfg->ops & (1U << i))
			jw_str(w, NULL, race_op_names[i]);
	jw_arr_end(w);
	jw_u64(w, "fork_sample_pages", cfg->fork_sample);
	jw_i64(w, "corrupt_page", cfg->corrupt_page);
	jw_obj_end(w);
}

static void emit_proc(struct jw *w, const struct race_config *cfg,
		      const struct race_proc *rp, unsigned int i)
{
	jw_obj_begin(w, NULL);
	jw_u64(w, "index", i);
	jw_i64(w, "pid", rp->pid);
	jw_str(w, "status", status_name(rp->status));
	jw_i64(w, "exit_code", rp->exit_code);
	jw_i64(w, "signal", rp->signal);
	if (rp->error[0])
		jw_str(w, "error", rp->error);
	else
		jw_null(w, "error");
	jw_hex(w, "base", rp->base);
	jw_u64(w, "size_bytes", rp->size);
	jw_u64(w, "pages", rp->size / cfg->page_size);
	jw_dbl(w, "fill_s", (double)rp->fill_ns / 1e9, 6);
	jw_dbl(w, "race_s", (double)rp->race_ns / 1e9, 6);
	jw_dbl(w, "final_verify_s", (double)rp->final_ns / 1e9, 6);
	jw_u64(w, "minflt", rp->minflt);
	jw_u64(w, "majflt", rp->majflt);
	jw_u64(w, "mismatches", rp->mismatches);
	jw_u64(w, "fork_mismatches", rp->fork_mismatches);
	emit_count(w, &rp->c);
	jw_pageout(w, rp->pageout);
	jw_kb(w, "anon_huge_kb_filled", rp->anon_huge_kb_filled);
	jw_kb(w, "anon_huge_kb_end", rp->anon_huge_kb_end);
	jw_kb(w, "rss_kb_end", rp->rss_kb_end);
	jw_kb(w, "swap_kb_end", rp->swap_kb_end);
	jw_obj_end(w);
}

static void emit_mismatches(struct jw *w, const struct race_config *cfg,
			    const struct race_proc *rps)
{
	unsigned int i, j;

	jw_arr_begin(w, "mismatches");
	for (i = 0; i < cfg->procs; i++) {
		const struct race_proc *rp = &rps[i];

		for (j = 0; j < rp->nmis && j < RACE_PROC_MIS; j++) {
			const struct race_mis *m = &rp->mis[j];

			jw_obj_begin(w, NULL);
			jw_u64(w, "proc", i);
			jw_str(w, "who", who_names[m->who]);
			jw_bool(w, "fork", m->who == BY_FORK_CHILD);
			jw_u64(w, "page", m->page);
			jw_hex(w, "addr", m->addr);
			jw_u64(w, "offset", m->offset);
			jw_u64(w, "gen", m->gen);
			jw_bool(w, "zero", m->zero);
			jw_hex(w, "expected", m->expected);
			jw_hex(w, "found", m->found);
			jw_u64(w, "bad_words", m->nbad);
			jw_obj_end(w);
		}
	}
	jw_arr_end(w);
}

/* all processes together */
struct race_total {
	int status;
	uint64_t pages, mismatches, fork_mismatches, minflt, majflt;
	uint64_t race_ns;
	int pageout;
	int64_t huge_filled, huge_end, rss_end, swap_end;
	struct race_count c;
};

static void kb_add(int64_t *sum, int64_t kb)
{
	if (kb >= 0)
		*sum = (*sum < 0 ? 0 : *sum) + kb;
}

static void total(const struct race_config *cfg, const struct race_proc *rps,
		  struct race_total *tot)
{
	unsigned int i;

	memset(tot, 0, sizeof(*tot));
	tot->status = ST_OK;
	tot->pageout = -1;
	tot->huge_filled = tot->huge_end = tot->rss_end = tot->swap_end = -1;
	for (i = 0; i < cfg->procs; i++) {
		const struct race_proc *rp = &rps[i];
		const uint64_t *src = (const uint64_t *)&rp->c;
		uint64_t *dst = (uint64_t *)&tot->c;
		size_t j;

		if (rp->status > tot->status || rp->status < ST_OK)
			tot->status = rp->status < ST_OK ? ST_ERROR :
				      rp->status;
		tot->pages += rp->size / cfg->page_size;
		tot->mismatches += rp->mismatches;
		tot->fork_mismatches += rp->fork_mismatches;
		tot->minflt += rp->minflt;
		tot->majflt += rp->majflt;
		if (rp->race_ns > tot->race_ns)
			tot->race_ns = rp->race_ns;
		if (rp->pageout >= 0)
			tot->pageout = rp->pageout && tot->pageout != 0;
		kb_add(&tot->huge_filled, rp->anon_huge_kb_filled);
		kb_add(&tot->huge_end, rp->anon_huge_kb_end);
		kb_add(&tot->rss_end, rp->rss_kb_end);
		kb_add(&tot->swap_end, rp->swap_kb_end);
		for (j = 0; j < sizeof(rp->c) / sizeof(uint64_t); j++)
			dst[j] += src[j];
	}
	if (tot->mismatches || tot->fork_mismatches)
		tot->status = ST_MISMATCH;
}

static void report_json(const struct race_config *cfg,
			const struct race_proc *rps,
			const struct race_total *tot, int exit_code)
{
	struct jw w;
	unsigned int i;

	jw_init(&w, stdout);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "schema", RACE_SCHEMA);
	jw_str(&w, "status", status_name(tot->status));
	jw_i64(&w, "exit_code", exit_code);
	emit_config(&w, cfg);
	sysinfo_emit(&w, cfg->page_size, cfg->mem_total, cfg->swap_total);
	jw_obj_begin(&w, "total");
	jw_str(&w, "status", status_name(tot->status));
	jw_u64(&w, "procs", cfg->procs);
	jw_u64(&w, "pages", tot->pages);
	jw_dbl(&w, "race_s", (double)tot->race_ns / 1e9, 6);
	jw_u64(&w, "minflt", tot->minflt);
	jw_u64(&w, "majflt", tot->majflt);
	jw_u64(&w, "mismatches", tot->mismatches);
	jw_u64(&w, "fork_mismatches", tot->fork_mismatches);
	emit_count(&w, &tot->c);
	jw_pageout(&w, tot->pageout);
	jw_kb(&w, "anon_huge_kb_filled", tot->huge_filled);
	jw_kb(&w, "anon_huge_kb_end", tot->huge_end);
	jw_kb(&w, "rss_kb_end", tot->rss_end);
	jw_kb(&w, "swap_kb_end", tot->swap_end);
	jw_obj_end(&w);
	jw_arr_begin(&w, "processes");
	for (i = 0; i < cfg->procs; i++)
		emit_proc(&w, cfg, &rps[i], i);
	jw_arr_end(&w);
	emit_mismatches(&w, cfg, rps);
	jw_obj_end(&w);
	jw_finish(&w);
}

static void report_human(const struct race_config *cfg,
			 const struct race_total *tot, int exit_code)
{
	const struct race_count *c = &tot->c;
	unsigned int i;

	fprintf(stderr, "swaprace: %u x %.1f MiB, %u faulters + %u mutators "
		"each, %.1f s: verified %" PRIu64 " pages (%" PRIu64
		" by fork children), %" PRIu64 " mismatches (%" PRIu64
		" by fork children), %" PRIu64 " errors\n  ops:", cfg->procs,
		(double)cfg->size / 1048576.0, cfg->faulters, cfg->mutators,
		(double)tot->race_ns / 1e9, c->verified, c->fork_verified,
		tot->mismatches, tot->fork_mismatches, c->errors);
	for (i = 0; i < RACE_NOPS; i++)
		fprintf(stderr, " %s %" PRIu64 "+%" PRIu64, race_op_names[i],
			c->ops[i], c->sub_ops[i]);
	fprintf(stderr, "\n  faults %" PRIu64 " minor, %" PRIu64 " major; "
		"status %s, exit %d\n", tot->minflt, tot->majflt,
		status_name(tot->status), exit_code);
}

static int run(const struct race_config *cfg)
{
	size_t len = cfg->procs * sizeof(struct race_proc);
	struct race_proc *rps;
	struct race_total tot;
	unsigned int i;
	int exit_code;

	rps = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rps == MAP_FAILED) {
		fprintf(stderr, "swaprace: no memory for the results\n");
		return EXIT_ERROR;
	}
	mlock(rps, len);	/* best effort: keep results out of swap */
	for (i = 0; i < cfg->procs; i++) {
		rps[i].exit_code = -1;
		rps[i].pageout = -1;
		rps[i].anon_huge_kb_filled = -1;
		rps[i].anon_huge_kb_end = -1;
		rps[i].rss_kb_end = -1;
		rps[i].swap_kb_end = -1;
	}
	start_procs(cfg, rps);
	wait_procs(cfg, rps);
	total(cfg, rps, &tot);
	exit_code = exit_of_status(tot.status);
	report_json(cfg, rps, &tot, exit_code);
	if (!cfg->quiet)
		report_human(cfg, &tot, exit_code);
	munmap(rps, len);
	return exit_code;
}

int main(int argc, char **argv)
{
	struct race_config cfg;
	bool help;
	int ret;

	ret = race_options(&cfg, argc, argv, &help);
	if (ret)
		return ret;
	if (help) {
		race_usage(stdout);
		return EXIT_OK;
	}
	return run(&cfg);
}
