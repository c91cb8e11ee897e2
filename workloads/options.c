// SPDX-License-Identifier: GPL-2.0
/*
 * Command line parsing and resolution of sizes and work settings.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parse.h"
#include "procfs.h"
#include "swapbench.h"
#include "work.h"

void usage(FILE *f)
{
	fputs(
"usage: swapbench [options]\n"
"Anonymous-memory swap workload; JSON on stdout, summary on stderr.\n"
"\n"
"  -m, --mode MODE            access (default), fill or combined\n"
"  -p, --procs N              processes (fork) [1]\n"
"  -t, --threads N            threads per process [1]\n"
"  -s, --size SIZE            bytes per task (thread), K/M/G/T suffix [64M]\n"
"      --size-frac-mem F      size per task = F * MemTotal\n"
"      --size-frac-memswap F  size per task = F * (MemTotal + SwapTotal)\n"
"  -P, --pattern PAT          seq, seq-back or random [seq]\n"
"      --step N               touch every N-th page [1]\n"
"  -n, --passes N             passes over the area [2; fill: 1]\n"
"      --reread               passes after the first read every page and\n"
"                             check the first pass's stamps, writing\n"
"                             nothing (a page swapped in stays clean)\n"
"  -r, --runtime SEC          stop after SEC seconds (passes unlimited\n"
"                             unless --passes is given too)\n"
"      --warmup-passes N      leave the first N passes out of the latency\n"
"      --work-us US           CPU work per page: busy-wait US microseconds\n"
"      --work-calibration F   ... as a calibrated instruction loop (file F)\n"
"      --calibrate F          calibrate the loop for --work-us [24], write F\n"
"      --thp MODE             default, madvise (MADV_HUGEPAGE) or nohuge;\n"
"                             madvise rounds a size from a fraction down\n"
"                             to whole 2 MiB huge pages\n"
"      --thp-holes N          madvise: the last 2 MiB range of every N gets\n"
"                             4 KiB pages at first touch, as when no THP\n"
"                             could be allocated there\n"
"      --page-fill MODE       what a page holds besides its stamps: zero\n"
"                             [default], half or random (noise in half or\n"
"                             all of each sector: zram compresses it ~2:1\n"
"                             or not at all, where zero pages do ~60:1)\n"
"      --fill-frac F          fill: all tasks together write F * (MemTotal\n"
"                             + SwapTotal)\n"
"      --bg-procs N           combined: background processes [1]\n"
"      --bg-threads N         combined: background threads per process [1]\n"
"      --bg-size SIZE         combined: background bytes per task [--size]\n"
"      --bg-size-frac-mem F, --bg-size-frac-memswap F\n"
"      --bg-pattern PAT       combined: background pattern [random]\n"
"      --seed N               run seed: random orders and page stamps [1]\n"
"      --no-verify            do not check page stamps\n"
"      --no-final-verify      skip the read-back sweep after the run\n"
"      --serial-final-verify  tasks sweep one at a time, in task order (a\n"
"                             seeking disk reads each area in order)\n"
"      --no-latency           do not time page touches\n"
"      --survive-sigbus       a page the kernel cannot read back from swap\n"
"                             (SIGBUS at it) is counted lost, discarded and\n"
"                             written anew; any other SIGBUS io-kills its\n"
"                             process (not a crash) and the others go on\n"
"      --fork-share           after pass 0 each process forks a child that\n"
"                             verifies the areas it shares copy-on-write\n"
"      --fork-after-pass N    ... after pass N instead, once pages have\n"
"                             been swapped in (and out) again\n"
"      --dump-order           print the page order of task 0 and exit\n"
"      --selftest-hist        histogram test: ns values on stdin, \"--\"\n"
"                             separates sets; prints percentiles\n"
"      --corrupt-page N[:OFF] test: flip byte OFF [0] of page N of task 0\n"
"                             after pass 0 wrote it\n"
"      --test-kill-page N     test: task 0 SIGKILLs itself at page N\n"
"      --test-sigbus-page N   test: task 0 raises SIGBUS at page N of pass 1\n"
"                             (pass 0 if there is one pass)\n"
"      --test-lost-page N     test: task 0 gets the SIGBUS of a failed swap-in\n"
"                             at page N of that pass, before touching it\n"
"  -q, --quiet                no summary on stderr\n"
"  -h, --help                 this text\n"
"\n"
"exit: 0 ok, 1 error, 2 usage, 3 data mismatch, 4 enomem, 5 oom (child\n"
"SIGKILLed), 6 child crashed; io-killed processes alone exit 0\n", f);
}

enum {
	OPT_FRAC_MEM = 256,
	OPT_FRAC_MEMSWAP,
	OPT_STEP,
	OPT_WARMUP,
	OPT_WORK_US,
	OPT_WORK_CAL,
	OPT_CALIBRATE,
	OPT_THP,
	OPT_FILL_FRAC,
	OPT_BG_PROCS,
	OPT_BG_THREADS,
	OPT_BG_SIZE,
	OPT_BG_FRAC_MEM,
	OPT_BG_FRAC_MEMSWAP,
	OPT_BG_PATTERN,
	OPT_SEED,
	OPT_NO_VERIFY,
	OPT_NO_FINAL,
	OPT_SERIAL_FINAL,
	OPT_NO_LATENCY,
	OPT_DUMP_ORDER,
	OPT_SELFTEST_HIST,
	OPT_CORRUPT,
	OPT_KILL,
	OPT_SIGBUS,
	OPT_SURVIVE_SIGBUS,
	OPT_LOST,
	OPT_FORK_SHARE,
	OPT_FORK_PASS,
	OPT_REREAD,
	OPT_THP_HOLES,
	OPT_PAGE_FILL,
};

static const struct option long_opts[] = {
	{ "mode", required_argument, NULL, 'm' },
	{ "procs", required_argument, NULL, 'p' },
	{ "threads", required_argument, NULL, 't' },
	{ "size", required_argument, NULL, 's' },
	{ "size-frac-mem", required_argument, NULL, OPT_FRAC_MEM },
	{ "size-frac-memswap", required_argument, NULL, OPT_FRAC_MEMSWAP },
	{ "pattern", required_argument, NULL, 'P' },
	{ "step", required_argument, NULL, OPT_STEP },
	{ "passes", required_argument, NULL, 'n' },
	{ "reread", no_argument, NULL, OPT_REREAD },
	{ "runtime", required_argument, NULL, 'r' },
	{ "warmup-passes", required_argument, NULL, OPT_WARMUP },
	{ "work-us", required_argument, NULL, OPT_WORK_US },
	{ "work-calibration", required_argument, NULL, OPT_WORK_CAL },
	{ "calibrate", required_argument, NULL, OPT_CALIBRATE },
	{ "thp", required_argument, NULL, OPT_THP },
	{ "thp-holes", required_argument, NULL, OPT_THP_HOLES },
	{ "page-fill", required_argument, NULL, OPT_PAGE_FILL },
	{ "fill-frac", required_argument, NULL, OPT_FILL_FRAC },
	{ "bg-procs", required_argument, NULL, OPT_BG_PROCS },
	{ "bg-threads", required_argument, NULL, OPT_BG_THREADS },
	{ "bg-size", required_argument, NULL, OPT_BG_SIZE },
	{ "bg-size-frac-mem", required_argument, NULL, OPT_BG_FRAC_MEM },
	{ "bg-size-frac-memswap", required_argument, NULL,
	  OPT_BG_FRAC_MEMSWAP },
	{ "bg-pattern", required_argument, NULL, OPT_BG_PATTERN },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "no-verify", no_argument, NULL, OPT_NO_VERIFY },
	{ "no-final-verify", no_argument, NULL, OPT_NO_FINAL },
	{ "serial-final-verify", no_argument, NULL, OPT_SERIAL_FINAL },
	{ "no-latency", no_argument, NULL, OPT_NO_LATENCY },
	{ "dump-order", no_argument, NULL, OPT_DUMP_ORDER },
	{ "selftest-hist", no_argument, NULL, OPT_SELFTEST_HIST },
	{ "corrupt-page", required_argument, NULL, OPT_CORRUPT },
	{ "test-kill-page", required_argument, NULL, OPT_KILL },
	{ "test-sigbus-page", required_argument, NULL, OPT_SIGBUS },
	{ "survive-sigbus", no_argument, NULL, OPT_SURVIVE_SIGBUS },
	{ "test-lost-page", required_argument, NULL, OPT_LOST },
	{ "fork-share", no_argument, NULL, OPT_FORK_SHARE },
	{ "fork-after-pass", required_argument, NULL, OPT_FORK_PASS },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* an option error: "swapbench: ...", and -1 */
#define bad(fmt, ...) opt_error("swapbench", fmt, ##__VA_ARGS__)

static int set_size(struct sb_group *g, enum sb_size kind, const char *arg)
{
	double v;

	if (kind == SIZE_BYTES ? parse_size(arg, &v) :
	    parse_pos_double(arg, 1000, &v))
		return bad("bad size or fraction '%s'", arg);
	g->size_kind = kind;
	g->size_arg = v;
	return 0;
}

/* --corrupt-page N[:OFFSET] */
static int parse_corrupt(struct sb_config *cfg, const char *s)
{
	const char *colon = strchr(s, ':');
	size_t len = colon ? (size_t)(colon - s) : strlen(s);
	uint64_t page, off = 0;
	char num[32];

	if (len >= sizeof(num))
		return -1;
	memcpy(num, s, len);
	num[len] = '\0';
	if (parse_u64(num, 0, 1ULL << 48, &page) ||
	    (colon && parse_u64(colon + 1, 0, UINT32_MAX, &off)))
		return -1;
	cfg->corrupt_page = (int64_t)page;
	cfg->corrupt_offset = off;
	return 0;
}

struct seen {
	bool passes, runtime, size, bg, pattern, work_us, fork_pass;
};

static int parse_one(struct sb_config *cfg, int c, const char *arg,
		     struct seen *seen, int *action)
{
	struct sb_group *fg = &cfg->grp[0], *bg = &cfg->grp[1];
	uint64_t u;
	double d;

	switch (c) {
	case 'm':
		if (!strcmp(arg, "access"))
			cfg->mode = MODE_ACCESS;
		else if (!strcmp(arg, "fill"))
			cfg->mode = MODE_FILL;
		else if (!strcmp(arg, "combined"))
			cfg->mode = MODE_COMBINED;
		else
			return bad("unknown mode '%s'", arg);
		return 0;
	case 'p':
		return parse_uint(arg, SB_MAX_PROCS, &fg->procs) ?
		       bad("bad process count '%s'", arg) : 0;
	case 't':
		return parse_uint(arg, SB_MAX_THREADS, &fg->threads) ?
		       bad("bad thread count '%s'", arg) : 0;
	case 's':
		seen->size = true;
		return set_size(fg, SIZE_BYTES, arg);
	case OPT_FRAC_MEM:
		seen->size = true;
		return set_size(fg, SIZE_FRAC_MEM, arg);
	case OPT_FRAC_MEMSWAP:
		seen->size = true;
		return set_size(fg, SIZE_FRAC_MEMSWAP, arg);
	case 'P':
		seen->pattern = true;
		return pattern_parse(arg, &fg->pattern) ?
		       bad("unknown pattern '%s'", arg) : 0;
	case OPT_STEP:
		return parse_u64(arg, 1, 1ULL << 40, &cfg->step) ?
		       bad("bad step '%s'", arg) : 0;
	case 'n':
		seen->passes = true;
		return parse_u64(arg, 1, 1ULL << 48, &cfg->passes) ?
		       bad("bad pass count '%s'", arg) : 0;
	case 'r':
		seen->runtime = true;
		if (parse_pos_double(arg, 1e7, &d))
			return bad("bad runtime '%s'", arg);
		cfg->runtime_ns = (uint64_t)(d * 1e9);
		return 0;
	case OPT_WARMUP:
		if (!strcmp(arg, "0"))
			return 0;
		return parse_u64(arg, 1, 1ULL << 48, &cfg->warmup_passes) ?
		       bad("bad warm-up pass count '%s'", arg) : 0;
	case OPT_WORK_US:
		seen->work_us = true;
		if (!strcmp(arg, "0"))
			return 0;
		if (parse_pos_double(arg, 1e7, &d))
			return bad("bad --work-us '%s'", arg);
		cfg->work_ns = (uint64_t)(d * 1e3 + 0.5);
		return 0;
	case OPT_WORK_CAL:
		cfg->calib_file = arg;
		return 0;
	case OPT_CALIBRATE:
		cfg->calib_file = arg;
		*action = ACT_CALIBRATE;
		return 0;
	case OPT_THP:
		if (!strcmp(arg, "default"))
			cfg->thp = THP_DEFAULT;
		else if (!strcmp(arg, "madvise") || !strcmp(arg, "huge"))
			cfg->thp = THP_MADVISE;
		else if (!strcmp(arg, "nohuge"))
			cfg->thp = THP_NOHUGE;
		else
			return bad("unknown --thp '%s'", arg);
		return 0;
	case OPT_THP_HOLES:
		return parse_u64(arg, 1, 1ULL << 40, &cfg->thp_holes) ?
		       bad("bad --thp-holes '%s'", arg) : 0;
	case OPT_PAGE_FILL:
		if (!strcmp(arg, "zero"))
			cfg->fill_words = 0;
		else if (!strcmp(arg, "half"))
			cfg->fill_words = STAMP_SECTOR_WORDS / 2 - 1;
		else if (!strcmp(arg, "random"))
			cfg->fill_words = STAMP_SECTOR_WORDS - 2;
		else
			return bad("unknown --page-fill '%s'", arg);
		return 0;
	case OPT_FILL_FRAC:
		return parse_pos_double(arg, 1000, &cfg->fill_frac) ?
		       bad("bad --fill-frac '%s'", arg) : 0;
	case OPT_BG_PROCS:
		seen->bg = true;
		return parse_uint(arg, SB_MAX_PROCS, &bg->procs) ?
		       bad("bad process count '%s'", arg) : 0;
	case OPT_BG_THREADS:
		seen->bg = true;
		return parse_uint(arg, SB_MAX_THREADS, &bg->threads) ?
		       bad("bad thread count '%s'", arg) : 0;
	case OPT_BG_SIZE:
		seen->bg = true;
		return set_size(bg, SIZE_BYTES, arg);
	case OPT_BG_FRAC_MEM:
		seen->bg = true;
		return set_size(bg, SIZE_FRAC_MEM, arg);
	case OPT_BG_FRAC_MEMSWAP:
		seen->bg = true;
		return set_size(bg, SIZE_FRAC_MEMSWAP, arg);
	case OPT_BG_PATTERN:
		seen->bg = true;
		return pattern_parse(arg, &bg->pattern) ?
		       bad("unknown pattern '%s'", arg) : 0;
	case OPT_SEED:
		return parse_u64(arg, 0, UINT64_MAX, &cfg->seed) ?
		       bad("bad seed '%s'", arg) : 0;
	case OPT_NO_VERIFY:
		cfg->verify = false;
		cfg->final_verify = false;
		return 0;
	case OPT_NO_FINAL:
		cfg->final_verify = false;
		return 0;
	case OPT_SERIAL_FINAL:
		cfg->serial_final = true;
		return 0;
	case OPT_REREAD:
		cfg->reread = true;
		return 0;
	case OPT_NO_LATENCY:
		cfg->latency = false;
		return 0;
	case OPT_DUMP_ORDER:
		*action = ACT_DUMP_ORDER;
		return 0;
	case OPT_SELFTEST_HIST:
		*action = ACT_SELFTEST_HIST;
		return 0;
	case OPT_CORRUPT:
		return parse_corrupt(cfg, arg) ?
		       bad("bad --corrupt-page '%s'", arg) : 0;
	case OPT_KILL:
		if (parse_u64(arg, 0, 1ULL << 48, &u))
			return bad("bad --test-kill-page '%s'", arg);
		cfg->kill_page = (int64_t)u;
		return 0;
	case OPT_SIGBUS:
		if (parse_u64(arg, 0, 1ULL << 48, &u))
			return bad("bad --test-sigbus-page '%s'", arg);
		cfg->sigbus_page = (int64_t)u;
		return 0;
	case OPT_SURVIVE_SIGBUS:
		cfg->survive_sigbus = true;
		return 0;
	case OPT_LOST:
		if (parse_u64(arg, 0, 1ULL << 48, &u))
			return bad("bad --test-lost-page '%s'", arg);
		cfg->lost_page = (int64_t)u;
		return 0;
	case OPT_FORK_SHARE:
		cfg->fork_share = true;
		return 0;
	case OPT_FORK_PASS:
		if (parse_u64(arg, 0, 1ULL << 32, &cfg->fork_pass))
			return bad("bad --fork-after-pass '%s'", arg);
		seen->fork_pass = true;
		return 0;
	case 'q':
		cfg->quiet = true;
		return 0;
	case 'h':
		*action = ACT_HELP;
		return 0;
	default:
		return -1;	/* getopt printed the reason */
	}
}

static void defaults(struct sb_config *cfg)
{
	unsigned int g;

	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = MODE_ACCESS;
	for (g = 0; g < SB_MAX_GROUPS; g++) {
		cfg->grp[g].procs = 1;
		cfg->grp[g].threads = 1;
		cfg->grp[g].size_kind = SIZE_BYTES;
		cfg->grp[g].size_arg = 64 << 20;
	}
	cfg->grp[1].size_arg = -1;	/* background: as the foreground */
	cfg->grp[1].pattern = PAT_RANDOM;
	cfg->step = 1;
	cfg->seed = 1;
	cfg->verify = true;
	cfg->final_verify = true;
	cfg->latency = true;
	cfg->corrupt_page = -1;
	cfg->kill_page = -1;
	cfg->sigbus_page = -1;
	cfg->lost_page = -1;
	cfg->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
}

static int env_hook(const char *name, int64_t *val)
{
	const char *s = getenv(name);
	uint64_t u;

	if (!s || !*s || *val >= 0)
		return 0;
	if (parse_u64(s, 0, 1ULL << 48, &u))
		return bad("bad value in environment variable %s", name);
	*val = (int64_t)u;
	return 0;
}

/* SWAPBENCH_CORRUPT_PAGE=N[:OFFSET], unless --corrupt-page was given */
static int env_corrupt(struct sb_config *cfg)
{
	const char *s = getenv("SWAPBENCH_CORRUPT_PAGE");

	if (!s || !*s || cfg->corrupt_page >= 0)
		return 0;
	if (parse_corrupt(cfg, s))
		return bad("bad value in environment variable %s",
			   "SWAPBENCH_CORRUPT_PAGE");
	return 0;
}

/* resolve the per-task size of group @g; 0, or -1 on failure */
static int resolve_size(struct sb_config *cfg, struct sb_group *g)
{
	double bytes = g->size_arg;

	if (g->size_kind == SIZE_FRAC_MEM)
		bytes = g->size_arg * (double)cfg->mem_total;
	else if (g->size_kind == SIZE_FRAC_MEMSWAP)
		bytes = g->size_arg *
			(double)(cfg->mem_total + cfg->swap_total);
	if (bytes >= 1ULL << 62)
		return bad("%s: size too large", g->name);
	g->size = ((uint64_t)bytes / cfg->page_size) * cfg->page_size;
	/*
	 * A MADV_HUGEPAGE area sized from memory is whole huge pages: a
	 * partial last range can never be a THP, and its 4 KiB faults would
	 * be most of what THP swap-in leaves.
	 */
	if (g->size_kind != SIZE_BYTES && cfg->thp == THP_MADVISE &&
	    g->size >= SB_HPAGE)
		g->size &= ~(SB_HPAGE - 1);
	if (g->size < cfg->page_size)
		g->size = cfg->page_size;
	return 0;
}

static int finalize(struct sb_config *cfg, const struct seen *seen,
		    int action)
{
	struct sb_group *fg = &cfg->grp[0], *bg = &cfg->grp[1];
	struct calibration cal;
	unsigned int g;
	int err;

	if (seen->bg && cfg->mode != MODE_COMBINED)
		return bad("%s", "--bg-* options need --mode combined");
	if (cfg->mode == MODE_FILL) {
		if ((seen->passes && cfg->passes != 1) || seen->runtime)
			return bad("%s", "fill mode writes once: no --passes "
				   "or --runtime");
		if (cfg->fill_frac > 0 && seen->size)
			return bad("%s", "give either --fill-frac or a size");
		cfg->passes = 1;
	} else if (cfg->fill_frac > 0) {
		return bad("%s", "--fill-frac needs --mode fill");
	}
	if (!seen->passes)
		cfg->passes = seen->runtime ? 0 : (cfg->mode == MODE_FILL ?
						   1 : 2);
	if (cfg->calib_file && action == ACT_RUN && !seen->work_us)
		return bad("%s", "--work-calibration needs --work-us");
	if (cfg->fork_share && !cfg->verify)
		return bad("%s", "--fork-share verifies: not with --no-verify");
	if (seen->fork_pass && !cfg->fork_share)
		return bad("%s", "--fork-after-pass needs --fork-share");
	if (cfg->passes && cfg->fork_pass >= cfg->passes)
		return bad("--fork-after-pass %" PRIu64 ": there are only %"
			   PRIu64 " passes", cfg->fork_pass, cfg->passes);
	if (cfg->lost_page >= 0 && !cfg->survive_sigbus)
		return bad("%s", "--test-lost-page needs --survive-sigbus");
	/* a lost page is written anew, with the stamps of its pass */
	if (cfg->reread && (cfg->mode == MODE_FILL || cfg->survive_sigbus))
		return bad("%s", "--reread: not in fill mode, not with "
			   "--survive-sigbus");
	if (cfg->thp_holes && cfg->thp != THP_MADVISE)
		return bad("%s", "--thp-holes needs --thp madvise");
	/* the first pass that reads back what was written, as a swap-in */
	cfg->sigbus_pass = cfg->passes == 1 ? 0 : 1;

	cfg->ngroups = cfg->mode == MODE_COMBINED ? 2 : 1;
	fg->name = cfg->mode == MODE_COMBINED ? "fg" :
		   (cfg->mode == MODE_FILL ? "fill" : "main");
	bg->name = "bg";
	if (cfg->mode == MODE_COMBINED) {
		bg->until_fg_done = true;
		if (bg->size_arg < 0) {
			bg->size_kind = fg->size_kind;
			bg->size_arg = fg->size_arg;
		}
	}

	if (cfg->work_ns)
		cfg->work = cfg->calib_file ? WORK_LOOP : WORK_BUSY;
	if (action == ACT_CALIBRATE) {
		if (!cfg->work_ns)
			cfg->work_ns = 24000;
		return 0;
	}
	if (cfg->work == WORK_LOOP) {
		err = calibration_read(cfg->calib_file, &cal);
		if (err) {
			fprintf(stderr, "swapbench: %s: %s\n", cfg->calib_file,
				err == -EINVAL ? "not a calibration file" :
				strerror(-err));
			return -1;
		}
		cfg->loop_iters = (uint64_t)((double)cal.iters *
					     (double)cfg->work_ns /
					     (double)cal.work_ns + 0.5);
		if (!cfg->loop_iters)
			cfg->loop_iters = 1;
	}

	err = meminfo_read(&cfg->mem_total, &cfg->swap_total);
	if (err && (cfg->fill_frac > 0 || fg->size_kind != SIZE_BYTES ||
		    bg->size_kind != SIZE_BYTES)) {
		fprintf(stderr, "swapbench: /proc/meminfo: %s\n",
			strerror(-err));
		return -1;
	}
	if (cfg->fill_frac > 0) {
		fg->size_kind = SIZE_BYTES;
		fg->size_arg = cfg->fill_frac *
			       (double)(cfg->mem_total + cfg->swap_total) /
			       (double)(fg->procs * fg->threads);
	}
	for (g = 0; g < cfg->ngroups; g++) {
		struct sb_group *gr = &cfg->grp[g];

		if (resolve_size(cfg, gr))
			return -1;
		gr->first_task = cfg->ntasks;
		gr->first_proc = cfg->nprocs;
		cfg->ntasks += gr->procs * gr->threads;
		cfg->nprocs += gr->procs;
	}
	if (cfg->ntasks > SB_MAX_TASKS)
		return bad("%s", "too many tasks (processes x threads)");
	if (cfg->corrupt_page >= 0 &&
	    ((uint64_t)cfg->corrupt_page >= fg->size / cfg->page_size ||
	     (uint64_t)cfg->corrupt_page % cfg->step))
		return bad("%s", "--corrupt-page must be a visited page of "
			   "the area");
	if (cfg->corrupt_offset >= cfg->page_size)
		return bad("--corrupt-page: the offset must be below the page "
			   "size (%" PRIu64 ")", cfg->page_size);
	stamp_key_init(&cfg->skey, cfg->seed, cfg->page_size);
	return 0;
}

/* 0 on success, else the exit code (EXIT_USAGE) */
int options_parse(struct sb_config *cfg, int argc, char **argv, int *action)
{
	struct seen seen;
	int c;

	defaults(cfg);
	memset(&seen, 0, sizeof(seen));
	*action = ACT_RUN;
	opterr = 1;
	while ((c = getopt_long(argc, argv, "m:p:t:s:P:n:r:qh", long_opts,
				NULL)) != -1) {
		if (parse_one(cfg, c, optarg, &seen, action))
			goto fail;
	}
	if (optind < argc) {
		bad("unexpected argument '%s'", argv[optind]);
		goto fail;
	}
	if (*action == ACT_HELP || *action == ACT_SELFTEST_HIST)
		return 0;
	if (seen.pattern && cfg->mode == MODE_FILL &&
	    cfg->grp[0].pattern != PAT_SEQ)
		fputs("swapbench: note: fill mode with a non-sequential "
		      "pattern\n", stderr);
	if (env_corrupt(cfg) ||
	    env_hook("SWAPBENCH_KILL_PAGE", &cfg->kill_page) ||
	    env_hook("SWAPBENCH_SIGBUS_PAGE", &cfg->sigbus_page))
		goto fail;
	if (finalize(cfg, &seen, *action))
		goto fail;
	return 0;
fail:
	fputc('\n', stderr);
	usage(stderr);
	return EXIT_USAGE;
}
