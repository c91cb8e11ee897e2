/* SPDX-License-Identifier: GPL-2.0 */
/*
 * swapbench: shared definitions.
 */
#ifndef SWAPBENCH_H
#define SWAPBENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hist.h"
#include "status.h"
#include "pattern.h"
#include "verify.h"

#define SB_SCHEMA	"swapbench/4"
#define SB_MAX_GROUPS	2
#define SB_MAX_PROCS	1024
#define SB_MAX_THREADS	256
#define SB_MAX_TASKS	4096
#define SB_TASK_MIS	8	/* mismatch details kept per task */
#define SB_HPAGE	(2UL << 20)

enum sb_mode { MODE_ACCESS, MODE_FILL, MODE_COMBINED };
enum sb_thp { THP_DEFAULT, THP_MADVISE, THP_NOHUGE };
enum sb_work { WORK_NONE, WORK_BUSY, WORK_LOOP };
enum sb_size { SIZE_BYTES, SIZE_FRAC_MEM, SIZE_FRAC_MEMSWAP };

struct sb_group {
	const char *name;
	enum pattern pattern;
	unsigned int procs;
	unsigned int threads;
	enum sb_size size_kind;
	double size_arg;	/* bytes or fraction */
	uint64_t size;		/* resolved bytes per task, page multiple */
	bool until_fg_done;	/* combined background: run while fg runs */
	unsigned int first_task;
	unsigned int first_proc;
};

struct sb_config {
	enum sb_mode mode;
	unsigned int ngroups;
	struct sb_group grp[SB_MAX_GROUPS];
	uint64_t step;		/* pages */
	uint64_t passes;	/* 0: unlimited (runtime bound) */
	uint64_t runtime_ns;	/* 0: none */
	uint64_t warmup_passes;	/* not counted in the latency histogram */
	uint64_t seed;
	enum sb_work work;
	uint64_t work_ns;
	uint64_t loop_iters;
	const char *calib_file;
	enum sb_thp thp;
	uint64_t thp_holes;	/* every N-th 2 MiB range 4 KiB, 0: none */
	/*
	 * Words of each 512-byte sector filled with noise at a page's first
	 * write, after the sector's stamp: 0 (zero), 31 (half) or 62
	 * (random).  A page of zeros and 8 stamps compresses some 60 to 1,
	 * which flatters a compressing swap device (zram, zswap).
	 */
	unsigned int fill_words;
	bool verify;
	bool final_verify;
	bool serial_final;	/* final sweeps one task at a time */
	bool reread;		/* passes after the first only read */
	bool latency;
	bool quiet;
	bool survive_sigbus;	/* lose an unreadable page, not the process */
	bool fork_share;	/* fork a verifier after pass fork_pass */
	uint64_t fork_pass;	/* --fork-after-pass [0] */
	double fill_frac;	/* fill mode: share of MemTotal+SwapTotal */
	int64_t corrupt_page;	/* test hook, -1: off */
	uint64_t corrupt_offset;	/* ... the byte it flips */
	int64_t kill_page;	/* test hook, -1: off */
	int64_t sigbus_page;	/* test hook, -1: off */
	int64_t lost_page;	/* test hook, -1: off */
	uint64_t sigbus_pass;	/* the pass of the SIGBUS test hooks */
	uint64_t page_size;
	uint64_t mem_total;
	uint64_t swap_total;
	unsigned int ntasks;
	unsigned int nprocs;
	struct stamp_key skey;
};

/* one task (thread); lives in memory shared with the parent */
struct sb_task {
	int status;			/* enum sb_status */
	int err;			/* errno of a failed setup */
	unsigned int group;
	unsigned int proc;		/* process index in its group */
	unsigned int thread;
	pid_t pid;
	uint64_t base;
	uint64_t size;
	uint64_t pages;			/* pages touched, main phase */
	uint64_t passes;		/* complete passes */
	uint64_t t_start;		/* CLOCK_MONOTONIC ns */
	uint64_t t_end;
	uint64_t first_pass_ns;		/* duration of pass 0 */
	uint64_t cpu_ns;		/* user + system, main phase */
	uint64_t first_pass_cpu_ns;
	uint64_t excluded_ns;		/* smaps reading inside the run */
	uint64_t minflt;		/* RUSAGE_THREAD, main phase */
	uint64_t majflt;
	uint64_t verified_pages;	/* pages checked (all phases) */
	uint64_t final_pages;		/* pages checked by the final sweep */
	uint64_t final_ns;
	uint64_t final_t0;		/* CLOCK_MONOTONIC ns at its start */
	int swept;			/* past its final sweep, or has none */
	uint64_t mismatches;
	uint64_t lost_pages;		/* unreadable from swap: rewritten */
	unsigned int nmis;
	struct mismatch mis[SB_TASK_MIS];
	int64_t anon_huge_kb_first;	/* after the first pass */
	int64_t anon_huge_kb_end;
	int64_t rss_kb_end;
	int64_t swap_kb_end;
	/* --fork-share: written by the process's forked verifier only */
	uint64_t fork_verified_pages;
	uint64_t fork_mismatches;
	uint64_t fork_lost_pages;
	uint64_t fork_ns;
	unsigned int fork_nmis;
	struct mismatch fork_mis[SB_TASK_MIS];
	struct hist hist;
};

#define SB_NBARRIERS 2

/* one process, in the shared memory too */
struct sb_pstate {
	unsigned int threads;
	unsigned int arrived[SB_NBARRIERS];	/* its tasks at each barrier */
	unsigned int fg_done;		/* its tasks done (combined fg) */
	int gone;			/* io-killed: counts as arrived, done */
	int fork_status;		/* enum sb_status, ST_NOTRUN: no fork */
	int fork_signal;
	pid_t fork_pid;
};

/*
 * The barriers and the foreground count: each process counts its own
 * tasks, so that the parent can count a process killed by SIGBUS
 * (--survive-sigbus) as arrived without knowing which of its tasks
 * got there before it died.  barrier[] adds all arrivals up, the fast
 * path while no process is gone.
 */
struct sb_shared {
	int abort;			/* parent: a child died, release */
	int stop;			/* foreground done: background stops */
	unsigned int ngone;		/* processes io-killed */
	unsigned int barrier[SB_NBARRIERS];
	struct sb_pstate *proc;		/* after task[], same mapping */
	struct sb_task task[];
};

/* options.c */
int options_parse(struct sb_config *cfg, int argc, char **argv, int *action);
void usage(FILE *f);
enum {
	ACT_RUN,
	ACT_HELP,
	ACT_SELFTEST_HIST,
	ACT_DUMP_ORDER,
	ACT_CALIBRATE,
};


/* run.c */
int child_main(const struct sb_config *cfg, struct sb_shared *sh,
	       unsigned int group, unsigned int proc);
void fg_check_stop(const struct sb_config *cfg, struct sb_shared *sh);
bool barrier_done(const struct sb_config *cfg, const struct sb_shared *sh,
		  unsigned int id);
void dump_order(const struct sb_config *cfg);

/* report.c */
struct sb_proc {
	pid_t pid;
	unsigned int group;
	unsigned int index;
	int status;			/* enum sb_status */
	int exit_code;			/* -1 if killed */
	int signal;
	uint64_t minflt;
	uint64_t majflt;
};

struct swapout_trace;

struct sb_result {
	int status;
	int exit_code;
	uint64_t minflt;		/* RUSAGE_CHILDREN */
	uint64_t majflt;
	struct sb_proc *procs;
	const struct swapout_trace *swapout;	/* fill mode, else NULL */
};

void report_json(const struct sb_config *cfg, const struct sb_shared *sh,
		 const struct sb_result *res);
void report_human(const struct sb_config *cfg, const struct sb_shared *sh,
		  const struct sb_result *res);

#endif
