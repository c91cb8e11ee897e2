// SPDX-License-Identifier: GPL-2.0
/*
 * swaplab-memtest: push anonymous memory through swap and check it.
 *
 * Fills SIZE bytes of anonymous memory with a pattern derived from each
 * word's page index and offset (so a page that comes back from the wrong
 * slot is caught), then reads it all back and verifies it.  With SIZE
 * above RAM the first pass swaps out and the verify pass swaps back in.
 *
 *   swaplab-memtest [--mib N | --frac-mem F] [--passes P] [--corrupt]
 *
 * Prints one JSON object (schema "swaplab-memtest/1") on stdout.
 * Exit: 0 ok, 1 error, 2 usage, 3 data mismatch, 4 allocation failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define STRIDE 64	/* bytes between checked words */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long long vmstat(const char *key)
{
	char line[256];
	size_t n = strlen(key);
	long long v = -1;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ' ')
			v = atoll(line + n + 1);
	fclose(f);
	return v;
}

static unsigned long long mem_total(void)
{
	char line[256];
	unsigned long long kb = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

static inline uint64_t pattern(uint64_t page, uint64_t off, uint64_t pass)
{
	uint64_t x = (page << 16) ^ off ^ (pass * 0x9e3779b97f4a7c15ULL);

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

int main(int argc, char **argv)
{
	unsigned long long size = 64ULL << 20, pages, p, mism = 0;
	long long first_bad = -1, in0, out0;
	long psz = sysconf(_SC_PAGESIZE);
	double frac = 0, t0, t_write = 0, t_verify = 0;
	int passes = 1, corrupt = 0, i, pass;
	unsigned char *mem;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mib") && i + 1 < argc) {
			size = strtoull(argv[++i], NULL, 10) << 20;
		} else if (!strcmp(argv[i], "--frac-mem") && i + 1 < argc) {
			frac = strtod(argv[++i], NULL);
		} else if (!strcmp(argv[i], "--passes") && i + 1 < argc) {
			passes = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--corrupt")) {
			corrupt = 1;
		} else {
			fprintf(stderr, "usage: %s [--mib N | --frac-mem F] "
				"[--passes P] [--corrupt]\n", argv[0]);
			return 2;
		}
	}
	if (frac > 0)
		size = (unsigned long long)((double)mem_total() * frac);
	pages = size / (unsigned long long)psz;
	size = pages * (unsigned long long)psz;
	if (!pages || passes < 1) {
		fprintf(stderr, "memtest: nothing to do\n");
		return 2;
	}
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED) {
		perror("memtest: mmap");
		return 4;
	}
	in0 = vmstat("pswpin");
	out0 = vmstat("pswpout");
	for (pass = 0; pass < passes; pass++) {
		t0 = now();
		for (p = 0; p < pages; p++) {
			uint64_t *w = (uint64_t *)(mem + p * (uint64_t)psz);
			uint64_t off;

			for (off = 0; off < (uint64_t)psz / 8; off += STRIDE / 8)
				w[off] = pattern(p, off, (uint64_t)pass);
		}
		t_write += now() - t0;
		if (corrupt && pass == passes - 1)
			((uint64_t *)mem)[(pages / 2) * (uint64_t)psz / 8] ^= 1;
		t0 = now();
		for (p = 0; p < pages; p++) {
			uint64_t *w = (uint64_t *)(mem + p * (uint64_t)psz);
			uint64_t off;
			int bad = 0;

			for (off = 0; off < (uint64_t)psz / 8; off += STRIDE / 8)
				bad |= w[off] != pattern(p, off, (uint64_t)pass);
			if (bad) {
				if (first_bad < 0)
					first_bad = (long long)p;
				mism++;
			}
		}
		t_verify += now() - t0;
	}
	printf("{\"schema\":\"swaplab-memtest/1\",\"bytes\":%llu,"
	       "\"pages\":%llu,\"passes\":%d,\"write_s\":%.6f,"
	       "\"verify_s\":%.6f,\"mismatched_pages\":%llu,"
	       "\"first_mismatch_page\":%lld,\"pswpin\":%lld,"
	       "\"pswpout\":%lld,\"status\":\"%s\"}\n",
	       size, pages, passes, t_write, t_verify, mism, first_bad,
	       vmstat("pswpin") - in0, vmstat("pswpout") - out0,
	       mism ? "mismatch" : "ok");
	return mism ? 3 : 0;
}
