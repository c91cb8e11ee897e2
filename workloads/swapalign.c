// SPDX-License-Identifier: GPL-2.0
/*
 * swapalign: swap 2 MiB ranges out as 4 KiB pages whose swap slots are a
 * whole swap cluster in order, then let them fault back in as THPs.
 *
 *   swapalign [--ranges N] [--rounds N] [--push-frac-mem F]
 *
 * A kernel that swaps a THP in whole takes such a range (512 entries, one
 * cluster, in order) as one 2 MiB IO from the first slot's sector.  That
 * is only right when the slots are contiguous on the device, which a
 * swap file's need not be (issue 24, item 1).  swapalign makes the case
 * happen on purpose instead of by chance:
 *
 *   1. N ranges, 2 MiB aligned, first touched under MADV_NOHUGEPAGE (so
 *      they are 4 KiB pages), every word written with its page's own
 *      value;
 *   2. MADV_PAGEOUT on each range in turn: reclaim takes its 512 pages in
 *      order, and on an area no one has swapped to yet each range gets a
 *      fresh cluster from its start (the process stays on CPU 0: swap
 *      slots come from per-CPU caches and clusters); then F x RAM written
 *      and freed again, so that reclaim also drops the pages from the
 *      swap cache once written (MADV_PAGEOUT only starts their writeback)
 *      and the reads below go to the device;
 *   3. MADV_HUGEPAGE, then every word read back (the faults may swap a
 *      range in whole);
 *   4. every word rewritten, memory pressure first (reclaim writes a THP
 *      brought in whole, and still in the swap cache, as one IO to the
 *      same sector: MADV_PAGEOUT would split it), then paged out and
 *      pushed out of the swap cache again, and read back; --rounds times;
 *   5. paged out and pushed once more, then every word rewritten as the
 *      first touch, so the ranges come back by write faults (a kernel
 *      that brings a range in whole for a write fault by its only user
 *      frees its 512 swap slots, as do_swap_page() frees a page's), and
 *      read back.
 * The area's swap entries (smaps) and the swap in use (meminfo, the swap
 * cache's slots included) are taken after each step that moves pages.
 * One JSON document on stdout; exit 3 on a page that read back wrong
 * (status.h).
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "jw.h"
#include "parse.h"
#include "procfs.h"
#include "push.h"
#include "status.h"
#include "sysinfo.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

#define RANGE_BYTES	(2ul << 20)

struct align_config {
	unsigned int ranges;
	unsigned int rounds;
	uint64_t page_size;
	uint64_t mem_total;
	uint64_t swap_total;
	size_t push_bytes;	/* F x MemTotal, 1.0 by default */
	bool pinned;		/* to CPU 0 */
};

struct step {
	const char *name;
	unsigned int round;
	int64_t swap_kb;	/* the area's Swap: in smaps after it, or -1 */
	int64_t swap_used_kb;	/* the system's, swap cache included, or -1 */
	uint64_t bad_pages;
	uint64_t first_bad_page;
	uint64_t first_bad_word;
	int err;		/* errno of a failed madvise, or 0 */
};

#define MAX_STEPS 64

struct align_run {
	struct align_config cfg;
	uint8_t *area;
	size_t len;
	struct step steps[MAX_STEPS];
	unsigned int nsteps;
};

static uint64_t word_value(uint64_t page, uint64_t word, unsigned int round)
{
	return (page << 24 | word << 4 | round) ^ 0x6a09e667f3bcc908ull;
}

static void write_all(struct align_run *r, unsigned int round)
{
	uint64_t words = r->cfg.page_size / 8, page, i;

	for (page = 0; page < r->len / r->cfg.page_size; page++) {
		uint64_t *p = (uint64_t *)(r->area + page * r->cfg.page_size);

		for (i = 0; i < words; i++)
			p[i] = word_value(page, i, round);
	}
}

static struct step *next_step(struct align_run *r, const char *name,
			      unsigned int round)
{
	struct step *s = &r->steps[r->nsteps++];

	memset(s, 0, sizeof(*s));
	s->swap_kb = -1;
	s->swap_used_kb = -1;
	s->name = name;
	s->round = round;
	return s;
}

static void note_swap(struct align_run *r, struct step *s)
{
	struct area_info ai;

	s->swap_kb = smaps_area((uintptr_t)r->area,
				(uintptr_t)r->area + r->len, &ai) ? -1 :
		     ai.swap_kb;
	if (meminfo_swap_used_kb(&s->swap_used_kb))
		s->swap_used_kb = -1;
}

static void check_all(struct align_run *r, unsigned int round)
{
	struct step *s = next_step(r, "read", round);
	uint64_t words = r->cfg.page_size / 8, page, i;

	for (page = 0; page < r->len / r->cfg.page_size; page++) {
		const uint64_t *p = (const uint64_t *)(r->area +
						       page * r->cfg.page_size);

		for (i = 0; i < words; i++) {
			if (p[i] == word_value(page, i, round))
				continue;
			if (!s->bad_pages++) {
				s->first_bad_page = page;
				s->first_bad_word = i;
			}
			break;
		}
	}
	note_swap(r, s);
}

/* every word rewritten: on swapped-out ranges, write faults bring them in */
static void write_step(struct align_run *r, unsigned int round)
{
	struct step *s = next_step(r, "write", round);

	write_all(r, round);
	note_swap(r, s);
}

static void pressure(struct align_run *r, unsigned int round)
{
	struct step *s = next_step(r, "pressure", round);

	s->err = push_memory(r->cfg.push_bytes, NULL, NULL);
	note_swap(r, s);
}

/*
 * MADV_PAGEOUT range by range (each one's pages go out in order), then
 * pressure, which frees them from the swap cache once written.
 */
static void page_out(struct align_run *r, unsigned int round)
{
	struct step *s = next_step(r, "pageout", round);
	size_t off;

	for (off = 0; off < r->len; off += RANGE_BYTES) {
		if (madvise(r->area + off, RANGE_BYTES, MADV_PAGEOUT)) {
			s->err = errno;
			break;
		}
	}
	if (!s->err)
		s->err = push_memory(r->cfg.push_bytes, NULL, NULL);
	note_swap(r, s);
}

static int advise(struct align_run *r, int advice, const char *name)
{
	struct step *s = next_step(r, name, 0);

	if (madvise(r->area, r->len, advice))
		s->err = errno;
	return s->err;
}

static int run(struct align_run *r)
{
	unsigned int round;
	size_t map_len;
	uint8_t *map;

	r->len = (size_t)r->cfg.ranges * RANGE_BYTES;
	map_len = r->len + RANGE_BYTES;
	map = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return -errno;
	r->area = (uint8_t *)(((uintptr_t)map + RANGE_BYTES - 1) &
			      ~(uintptr_t)(RANGE_BYTES - 1));
	if (advise(r, MADV_NOHUGEPAGE, "nohugepage"))
		return -r->steps[r->nsteps - 1].err;
	write_all(r, 0);
	page_out(r, 0);
	if (advise(r, MADV_HUGEPAGE, "hugepage"))
		return -r->steps[r->nsteps - 1].err;
	for (round = 0; round < r->cfg.rounds; round++) {
		check_all(r, round);
		write_all(r, round + 1);
		pressure(r, round + 1);
		page_out(r, round + 1);
	}
	check_all(r, r->cfg.rounds);
	page_out(r, r->cfg.rounds);
	write_step(r, r->cfg.rounds + 1);
	check_all(r, r->cfg.rounds + 1);
	return 0;
}

static void report(const struct align_run *r, int err, uint64_t bad)
{
	struct jw w;
	unsigned int i;

	jw_init(&w, stdout);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "schema", "swapalign/1");
	jw_obj_begin(&w, "config");
	jw_u64(&w, "ranges", r->cfg.ranges);
	jw_u64(&w, "rounds", r->cfg.rounds);
	jw_u64(&w, "range_bytes", RANGE_BYTES);
	jw_u64(&w, "push_bytes", r->cfg.push_bytes);
	jw_bool(&w, "pinned", r->cfg.pinned);
	jw_obj_end(&w);
	sysinfo_emit(&w, r->cfg.page_size, r->cfg.mem_total,
		     r->cfg.swap_total);
	jw_arr_begin(&w, "steps");
	for (i = 0; i < r->nsteps; i++) {
		const struct step *s = &r->steps[i];

		jw_obj_begin(&w, NULL);
		jw_str(&w, "step", s->name);
		jw_u64(&w, "round", s->round);
		if (s->swap_kb >= 0)
			jw_i64(&w, "swap_kb", s->swap_kb);
		if (s->swap_used_kb >= 0)
			jw_i64(&w, "swap_used_kb", s->swap_used_kb);
		jw_u64(&w, "bad_pages", s->bad_pages);
		if (s->bad_pages) {
			jw_u64(&w, "first_bad_page", s->first_bad_page);
			jw_u64(&w, "first_bad_word", s->first_bad_word);
		}
		if (s->err)
			jw_str(&w, "error", strerror(s->err));
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_obj_begin(&w, "total");
	jw_u64(&w, "pages", r->len / r->cfg.page_size);
	jw_u64(&w, "mismatches", bad);
	jw_obj_end(&w);
	jw_str(&w, "error", err ? strerror(-err) : NULL);
	jw_obj_end(&w);
	jw_finish(&w);
}

static int usage(void)
{
	fprintf(stderr, "usage: swapalign [--ranges N] [--rounds N] "
		"[--push-frac-mem F]\n");
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	struct align_run r = { .cfg = { .ranges = 8, .rounds = 2 } };
	double push_frac = 1.0;
	uint64_t bad = 0;
	cpu_set_t cpu0;
	unsigned int i;
	int err;

	for (i = 1; i < (unsigned int)argc; i++) {
		unsigned int *v = NULL;

		if (!strcmp(argv[i], "--push-frac-mem")) {
			/* 0: no pressure (a host test) */
			if (i + 1 == (unsigned int)argc ||
			    parse_share(argv[++i], 2, &push_frac))
				return usage();
			continue;
		}
		if (!strcmp(argv[i], "--ranges"))
			v = &r.cfg.ranges;
		else if (!strcmp(argv[i], "--rounds"))
			v = &r.cfg.rounds;
		/* each round takes three steps, the rest seven */
		if (!v || i + 1 == (unsigned int)argc ||
		    parse_uint(argv[++i], v == &r.cfg.rounds ?
			       (MAX_STEPS - 7) / 3 : 4096, v))
			return usage();
	}
	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	r.cfg.pinned = !sched_setaffinity(0, sizeof(cpu0), &cpu0);
	r.cfg.page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	if (meminfo_read(&r.cfg.mem_total, &r.cfg.swap_total))
		r.cfg.mem_total = r.cfg.swap_total = 0;
	r.cfg.push_bytes = (size_t)(r.cfg.mem_total * push_frac);
	err = run(&r);
	for (i = 0; i < r.nsteps; i++) {
		bad += r.steps[i].bad_pages;
		/* a failed step (madvise, the pressure's mmap) fails the run */
		if (!err && r.steps[i].err)
			err = -r.steps[i].err;
	}
	report(&r, err, bad);
	if (bad)
		return EXIT_MISMATCH;
	return err ? EXIT_ERROR : EXIT_OK;
}
