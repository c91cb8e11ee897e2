/* SPDX-License-Identifier: GPL-2.0 */
/*
 * swaprace: swap-in against concurrent page-table changes, every page
 * verified.  Shared definitions of swaprace.c (processes, threads, JSON)
 * and raceopt.c (command line).  See README.md, "swaprace".
 */
#ifndef SWAPRACE_H
#define SWAPRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "status.h"
#include "verify.h"

#define RACE_SCHEMA	"swaprace/1"
#define RACE_HPAGE	(2UL << 20)
#define RACE_MAX_PROCS	64
#define RACE_MAX_THREADS 64
#define RACE_PROC_MIS	8	/* mismatch details kept per process */

/* the mutators' operations; README.md says what each does */
enum race_op {
	OP_DONTNEED,
	OP_REMAP,
	OP_MPROTECT,
	OP_PAGEOUT,
	OP_FORK,
	RACE_NOPS,
};

/* who found a mismatch */
enum race_who {
	BY_FAULTER,
	BY_MUTATOR,
	BY_FINAL,
	BY_FORK_CHILD,
	BY_FORK_PARENT,
};

enum race_size { RSIZE_BYTES, RSIZE_FRAC_MEM };

struct race_config {
	unsigned int procs;
	unsigned int faulters;		/* threads per process */
	unsigned int mutators;		/* threads per process */
	enum race_size size_kind;
	double size_arg;		/* bytes or fraction of MemTotal */
	uint64_t size;			/* resolved, whole 2 MiB ranges */
	uint64_t runtime_ns;
	bool nohuge;			/* MADV_NOHUGEPAGE, else HUGEPAGE */
	bool walk_seq;			/* faulters take ranges in order */
	unsigned int write_pct;		/* faulter touches that rewrite */
	uint64_t sub_max;		/* largest sub-range, bytes */
	unsigned int ops;		/* bit mask of enum race_op */
	unsigned int fork_sample;	/* pages a fork child checks */
	uint64_t seed;
	int64_t corrupt_page;		/* test hook, -1: off */
	bool quiet;
	uint64_t page_size;
	uint64_t mem_total;
	uint64_t swap_total;
	struct stamp_key skey;
};

/* one mismatch, as found */
struct race_mis {
	uint64_t addr;			/* of the first bad word */
	uint64_t page;			/* index in the area */
	uint64_t offset;		/* of that word in the page */
	uint64_t gen;			/* generation expected */
	uint64_t expected;
	uint64_t found;
	unsigned int nbad;		/* bad stamp words of the page */
	int zero;			/* the page should have read as zero */
	int who;			/* enum race_who */
};

/* counts of one thread, added to its process's at the end */
struct race_count {
	uint64_t verified;		/* page checks, all phases */
	uint64_t written;		/* pages stamped anew */
	uint64_t busy_skips;		/* faulter touches of a page in use */
	uint64_t final_pages;		/* checks by the final sweep */
	uint64_t errors;		/* unexpected syscall failures */
	uint64_t ops[RACE_NOPS];	/* on whole 2 MiB ranges */
	uint64_t sub_ops[RACE_NOPS];	/* on sub-ranges */
	uint64_t fork_verified;		/* page checks by fork children */
	uint64_t fork_written;		/* their copy-on-write stamps */
};

/* one process, in memory shared with the parent (and fork children) */
struct race_proc {
	int status;			/* enum sb_status */
	int exit_code;			/* -1: killed */
	int signal;
	pid_t pid;
	uint64_t base;
	uint64_t size;
	uint64_t fill_ns;
	uint64_t race_ns;
	uint64_t final_ns;
	uint64_t minflt;		/* wait4: fork children's included */
	uint64_t majflt;
	struct race_count c;
	int pageout;			/* 1 works, 0 EINVAL, -1 not tried */
	uint64_t mismatches;		/* pages found wrong by the process */
	uint64_t fork_mismatches;	/* ... by its fork children */
	unsigned int nmis;		/* slots taken in mis[] */
	struct race_mis mis[RACE_PROC_MIS];
	int64_t anon_huge_kb_filled;	/* smaps, after the fill */
	int64_t anon_huge_kb_end;
	int64_t rss_kb_end;
	int64_t swap_kb_end;
	char error[128];		/* the first failure, "" if none */
};

extern const char *const race_op_names[RACE_NOPS];

/* raceopt.c: 0, or the exit code (EXIT_USAGE); *@help for -h */
int race_options(struct race_config *cfg, int argc, char **argv,
		 bool *help);
void race_usage(FILE *f);

#endif
