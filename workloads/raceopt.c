// SPDX-License-Identifier: GPL-2.0
/*
 * swaprace: the command line.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parse.h"
#include "procfs.h"
#include "swaprace.h"

#define DEF_OPS ((1U << RACE_NOPS) - 1)

const char *const race_op_names[RACE_NOPS] = {
	[OP_DONTNEED] = "dontneed",
	[OP_REMAP] = "remap",
	[OP_MPROTECT] = "mprotect",
	[OP_PAGEOUT] = "pageout",
	[OP_FORK] = "fork",
};

void race_usage(FILE *f)
{
	fputs(
"usage: swaprace [options]\n"
"Swap-in against concurrent page-table changes: faulter threads read and\n"
"write every 2 MiB range of an area pushed out to swap while mutator\n"
"threads MADV_DONTNEED, munmap + mmap, mprotect, MADV_PAGEOUT and fork\n"
"ranges and sub-ranges of it; every page checked. JSON on stdout.\n"
"\n"
"  -p, --procs N            processes, one area each [2]\n"
"      --faulters N         faulter threads per process [2]\n"
"      --mutators N         mutator threads per process [1]\n"
"  -s, --size SIZE          bytes per process, K/M/G suffix, whole 2 MiB\n"
"                           ranges [64M]\n"
"      --size-frac-mem F    size per process = F * MemTotal (rounded down\n"
"                           to 2 MiB ranges)\n"
"  -r, --runtime SEC        race for SEC seconds after the fill [10]\n"
"      --thp MODE           madvise (MADV_HUGEPAGE) or nohuge\n"
"                           (MADV_NOHUGEPAGE) [madvise]\n"
"      --walk ORDER         the ranges the faulters take: random, or seq\n"
"                           (in order, taking turns, as a kernel that\n"
"                           reads a THP whole only on sequential faults\n"
"                           needs) [random]\n"
"      --write-pct N        faulter touches that also rewrite the page,\n"
"                           0 to 100 [25]\n"
"      --sub-max SIZE       largest sub-range a mutator changes alone, a\n"
"                           power of two from the page size to 1M [1M]\n"
"      --ops LIST           mutator operations, comma-separated, of\n"
"                           dontneed, remap, mprotect, pageout, fork [all]\n"
"      --fork-sample N      pages a fork child checks [256]\n"
"      --seed N             random choices and page stamps [1]\n"
"      --corrupt-page N     test: flip a byte of page N of process 0 after\n"
"                           the fill (its 2 MiB range is left to the\n"
"                           faulters): must be found, exit 3\n"
"  -q, --quiet              no summary on stderr\n"
"  -h, --help               this text\n"
"\n"
"exit: 0 ok, 1 error, 2 usage, 3 data mismatch, 4 enomem, 5 oom (a\n"
"process SIGKILLed), 6 a process (or fork child) crashed\n", f);
}

enum {
	OPT_FAULTERS = 256,
	OPT_MUTATORS,
	OPT_FRAC_MEM,
	OPT_THP,
	OPT_WALK,
	OPT_WRITE_PCT,
	OPT_SUB_MAX,
	OPT_OPS,
	OPT_FORK_SAMPLE,
	OPT_SEED,
	OPT_CORRUPT,
};

static const struct option long_opts[] = {
	{ "procs", required_argument, NULL, 'p' },
	{ "faulters", required_argument, NULL, OPT_FAULTERS },
	{ "mutators", required_argument, NULL, OPT_MUTATORS },
	{ "size", required_argument, NULL, 's' },
	{ "size-frac-mem", required_argument, NULL, OPT_FRAC_MEM },
	{ "runtime", required_argument, NULL, 'r' },
	{ "thp", required_argument, NULL, OPT_THP },
	{ "walk", required_argument, NULL, OPT_WALK },
	{ "write-pct", required_argument, NULL, OPT_WRITE_PCT },
	{ "sub-max", required_argument, NULL, OPT_SUB_MAX },
	{ "ops", required_argument, NULL, OPT_OPS },
	{ "fork-sample", required_argument, NULL, OPT_FORK_SAMPLE },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "corrupt-page", required_argument, NULL, OPT_CORRUPT },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* an option error: "swaprace: ...", and -1 */
#define bad(fmt, ...) opt_error("swaprace", fmt, ##__VA_ARGS__)

/* "dontneed,fork": a mask of enum race_op; -1 on an unknown name */
static int parse_ops(const char *s, unsigned int *mask)
{
	char buf[128], *tok, *save;
	unsigned int m = 0, i;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < RACE_NOPS; i++)
			if (!strcmp(tok, race_op_names[i]))
				break;
		if (i == RACE_NOPS || m & (1U << i))
			return -1;
		m |= 1U << i;
	}
	if (!m)
		return -1;
	*mask = m;
	return 0;
}

static int parse_one(struct race_config *cfg, int c, const char *arg,
		     bool *help)
{
	uint64_t u;
	double d;

	switch (c) {
	case 'p':
		return parse_uint(arg, RACE_MAX_PROCS, &cfg->procs) ?
		       bad("bad process count '%s' (1 to %d)", arg,
			   RACE_MAX_PROCS) : 0;
	case OPT_FAULTERS:
		return parse_uint(arg, RACE_MAX_THREADS, &cfg->faulters) ?
		       bad("bad --faulters '%s' (1 to %d)", arg,
			   RACE_MAX_THREADS) : 0;
	case OPT_MUTATORS:
		if (!strcmp(arg, "0")) {
			cfg->mutators = 0;
			return 0;
		}
		return parse_uint(arg, RACE_MAX_THREADS, &cfg->mutators) ?
		       bad("bad --mutators '%s' (0 to %d)", arg,
			   RACE_MAX_THREADS) : 0;
	case 's':
		if (parse_size(arg, &cfg->size_arg))
			return bad("bad size '%s'", arg);
		cfg->size_kind = RSIZE_BYTES;
		return 0;
	case OPT_FRAC_MEM:
		if (parse_pos_double(arg, 100, &cfg->size_arg))
			return bad("bad --size-frac-mem '%s'", arg);
		cfg->size_kind = RSIZE_FRAC_MEM;
		return 0;
	case 'r':
		if (parse_pos_double(arg, 1e6, &d))
			return bad("bad runtime '%s'", arg);
		cfg->runtime_ns = (uint64_t)(d * 1e9);
		return 0;
	case OPT_THP:
		if (!strcmp(arg, "madvise") || !strcmp(arg, "huge"))
			cfg->nohuge = false;
		else if (!strcmp(arg, "nohuge"))
			cfg->nohuge = true;
		else
			return bad("unknown --thp '%s' (madvise or nohuge)",
				   arg);
		return 0;
	case OPT_WALK:
		if (!strcmp(arg, "random"))
			cfg->walk_seq = false;
		else if (!strcmp(arg, "seq"))
			cfg->walk_seq = true;
		else
			return bad("unknown --walk '%s' (random or seq)", arg);
		return 0;
	case OPT_WRITE_PCT:
		if (parse_u64(arg, 0, 100, &u))
			return bad("bad --write-pct '%s' (0 to 100)", arg);
		cfg->write_pct = (unsigned int)u;
		return 0;
	case OPT_SUB_MAX:
		if (parse_size(arg, &d) || d > (double)(1 << 20) ||
		    d < (double)cfg->page_size ||
		    ((uint64_t)d & ((uint64_t)d - 1)) ||
		    d != (double)(uint64_t)d)
			return bad("bad --sub-max '%s' (a power of two from "
				   "%" PRIu64 " to 1M)", arg, cfg->page_size);
		cfg->sub_max = (uint64_t)d;
		return 0;
	case OPT_OPS:
		return parse_ops(arg, &cfg->ops) ?
		       bad("bad --ops '%s' (distinct names of dontneed, remap,"
			   " mprotect, pageout, fork)", arg) : 0;
	case OPT_FORK_SAMPLE:
		return parse_uint(arg, 1U << 20, &cfg->fork_sample) ?
		       bad("bad --fork-sample '%s'", arg) : 0;
	case OPT_SEED:
		return parse_u64(arg, 0, UINT64_MAX, &cfg->seed) ?
		       bad("bad seed '%s'", arg) : 0;
	case OPT_CORRUPT:
		if (parse_u64(arg, 0, 1ULL << 36, &u))
			return bad("bad --corrupt-page '%s'", arg);
		cfg->corrupt_page = (int64_t)u;
		return 0;
	case 'q':
		cfg->quiet = true;
		return 0;
	case 'h':
		*help = true;
		return 0;
	default:
		return -1;	/* getopt printed the reason */
	}
}

static void defaults(struct race_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->procs = 2;
	cfg->faulters = 2;
	cfg->mutators = 1;
	cfg->size_kind = RSIZE_BYTES;
	cfg->size_arg = 64 << 20;
	cfg->runtime_ns = 10000000000ULL;
	cfg->write_pct = 25;
	cfg->sub_max = 1 << 20;
	cfg->ops = DEF_OPS;
	cfg->fork_sample = 256;
	cfg->seed = 1;
	cfg->corrupt_page = -1;
	cfg->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
}

static int finalize(struct race_config *cfg)
{
	double bytes = cfg->size_arg;
	int err;

	err = meminfo_read(&cfg->mem_total, &cfg->swap_total);
	if (err && cfg->size_kind == RSIZE_FRAC_MEM) {
		fprintf(stderr, "swaprace: /proc/meminfo: %s\n",
			strerror(-err));
		return -1;
	}
	if (cfg->size_kind == RSIZE_FRAC_MEM)
		bytes = cfg->size_arg * (double)cfg->mem_total;
	if (bytes >= (double)(1ULL << 46))
		return bad("%s", "size too large");
	/* whole 2 MiB ranges: every range can be a THP */
	cfg->size = (uint64_t)bytes & ~(RACE_HPAGE - 1);
	if (cfg->size < RACE_HPAGE)
		return bad("the area must hold a 2 MiB range at least (%.0f "
			   "bytes)", bytes);
	if (RACE_HPAGE % cfg->page_size || cfg->page_size < 512)
		return bad("page size %" PRIu64 " not supported",
			   cfg->page_size);
	if (cfg->corrupt_page >= 0 &&
	    (uint64_t)cfg->corrupt_page >= cfg->size / cfg->page_size)
		return bad("--corrupt-page must be a page of the area (below "
			   "%" PRIu64 ")", cfg->size / cfg->page_size);
	if (cfg->corrupt_page >= 0 && cfg->size == RACE_HPAGE &&
	    cfg->mutators)
		return bad("%s", "--corrupt-page: its 2 MiB range is left "
			   "alone, so the area needs a second one");
	stamp_key_init(&cfg->skey, cfg->seed, cfg->page_size);
	return 0;
}

int race_options(struct race_config *cfg, int argc, char **argv, bool *help)
{
	int c;

	defaults(cfg);
	*help = false;
	opterr = 1;
	while ((c = getopt_long(argc, argv, "p:s:r:qh", long_opts,
				NULL)) != -1) {
		if (parse_one(cfg, c, optarg, help))
			goto fail;
	}
	if (optind < argc) {
		bad("unexpected argument '%s'", argv[optind]);
		goto fail;
	}
	if (*help)
		return 0;
	if (finalize(cfg))
		goto fail;
	return 0;
fail:
	fputc('\n', stderr);
	race_usage(stderr);
	return EXIT_USAGE;
}
