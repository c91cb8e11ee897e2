// SPDX-License-Identifier: GPL-2.0
/*
 * swaplab-dilate: time fixed instruction loops, for time dilation.
 *
 * The same static binary runs on the host and in the guest; the ratio of
 * the guest's time to the host's is the dilation factor. Three loops:
 *   alu  a dependent multiply/xorshift chain (the factor the lab uses:
 *        the same kind of loop as swapbench's calibrated work)
 *   mem  a dependent pointer chase through 8 MiB (cache misses, TLB)
 *   load a sum over 16 KiB (L1-resident loads: under TCG every guest
 *        load goes through the soft TLB)
 *   sys  getppid() system calls (kernel entry and exit)
 *   fault first-touch page faults on fresh anonymous memory (4 KiB,
 *        MADV_NOHUGEPAGE), mmap/munmap included, per page: the kernel's
 *        anonymous-memory path, closest to what swap-in costs in CPU
 * Each is the best (minimum) of --trials short runs (about a millisecond
 * each in a guest: shorter than a scheduler time slice on a busy host, so
 * the best run is one that was not preempted).
 *
 *   swaplab-dilate [--trials N] [--kmsg] [-- PROGRAM ARGS...]
 *
 * Prints one JSON document (schema swaplab-dilate/1) on stdout, or, with
 * a PROGRAM, one line "swaplab-dilate: {...}" on stderr and in the kernel
 * log (--kmsg), then execs PROGRAM so that its stdout stays the result.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "jw.h"
#include "parse.h"

#define ALU_ITERS	400000ULL
#define MEM_BYTES	(8u << 20)
#define MEM_ITERS	20000ULL
#define SYS_ITERS	2000ULL
#define LOAD_WORDS	2048
#define LOAD_ITERS	200ULL		/* passes over LOAD_WORDS */
#define FAULT_PAGES	256ULL		/* 1 MiB per mapping */
#define FAULT_MAPS	1ULL

static volatile uint64_t sink = 0x2545f4914f6cdd1dULL;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

__attribute__((noinline)) static void alu_loop(uint64_t iters)
{
	uint64_t x = sink, i;

	for (i = 0; i < iters; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		x ^= x >> 29;
		__asm__ volatile("" : "+r"(x));
	}
	sink = x;
}

static uint32_t *chain;

static int chain_init(void)
{
	uint32_t n = MEM_BYTES / 64, i, j, t;
	uint32_t *perm;
	uint64_t x = 88172645463325252ULL;

	chain = aligned_alloc(64, MEM_BYTES);
	perm = malloc(n * sizeof(*perm));
	if (!chain || !perm)
		return -1;
	for (i = 0; i < n; i++)
		perm[i] = i;
	for (i = n - 1; i > 0; i--) {		/* seeded Fisher-Yates */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = (uint32_t)(x % (i + 1));
		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	/* one slot per 64-byte line: a single cycle through all lines */
	for (i = 0; i < n; i++)
		chain[perm[i] * 16] = perm[(i + 1) % n] * 16;
	free(perm);
	return 0;
}

__attribute__((noinline)) static void mem_loop(uint64_t iters)
{
	uint32_t p = 0;
	uint64_t i;

	for (i = 0; i < iters; i++)
		p = chain[p];
	sink += p;
}

static uint64_t words[LOAD_WORDS];

__attribute__((noinline)) static void load_loop(uint64_t iters)
{
	uint64_t x = 0, i;
	unsigned int j;

	for (i = 0; i < iters; i++) {
		for (j = 0; j < LOAD_WORDS; j++) {
			x += words[j] ^ j;
			__asm__ volatile("" : "+r"(x));	/* scalar */
		}
	}
	sink += x;
}

__attribute__((noinline)) static void fault_loop(uint64_t maps)
{
	size_t len = FAULT_PAGES * 4096;
	uint64_t m, p;
	char *a;

	for (m = 0; m < maps; m++) {
		a = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (a == MAP_FAILED)
			abort();
		madvise(a, len, MADV_NOHUGEPAGE);
		for (p = 0; p < FAULT_PAGES; p++)
			a[p * 4096] = (char)p;
		munmap(a, len);
	}
}

__attribute__((noinline)) static void sys_loop(uint64_t iters)
{
	uint64_t i;

	for (i = 0; i < iters; i++)
		sink += (uint64_t)syscall(SYS_getppid);
}

static double best_ns(void (*fn)(uint64_t), uint64_t iters,
		      unsigned int trials)
{
	double best = 0, t0, t;
	unsigned int i;

	fn(iters);			/* warm up (and translate, under TCG) */
	for (i = 0; i < trials; i++) {
		t0 = now_ns();
		fn(iters);
		t = now_ns() - t0;
		if (!i || t < best)
			best = t;
	}
	return best / (double)iters;
}

int main(int argc, char **argv)
{
	unsigned int trials = 101, w;
	int kmsg = 0, i, fd;
	double alu, mem, sys, load, fault;
	struct jw line = { 0 };

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--trials") && i + 1 < argc &&
		    !parse_uint(argv[i + 1], 100000, &trials)) {
			i++;
		} else if (!strcmp(argv[i], "--kmsg")) {
			kmsg = 1;
		} else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else {
			fprintf(stderr, "usage: %s [--trials N] [--kmsg] "
				"[-- PROGRAM ARGS...]\n", argv[0]);
			return 2;
		}
	}
	for (w = 0; w < LOAD_WORDS; w++)
		words[w] = (uint64_t)w * 2654435761u;
	if (chain_init()) {
		fprintf(stderr, "swaplab-dilate: out of memory\n");
		return 1;
	}
	alu = best_ns(alu_loop, ALU_ITERS, trials);
	mem = best_ns(mem_loop, MEM_ITERS, trials);
	sys = best_ns(sys_loop, SYS_ITERS, trials);
	load = best_ns(load_loop, LOAD_ITERS, trials) / LOAD_WORDS;
	fault = best_ns(fault_loop, FAULT_MAPS, trials) / FAULT_PAGES;
	/* one line: the lab finds it in a log by its prefix */
	jw_obj_begin(&line, NULL);
	jw_str(&line, "schema", "swaplab-dilate/1");
	jw_u64(&line, "trials", trials);
	jw_dbl(&line, "alu_ns_per_iter", alu, 4);
	jw_dbl(&line, "mem_ns_per_iter", mem, 4);
	jw_dbl(&line, "sys_ns_per_call", sys, 4);
	jw_dbl(&line, "load_ns_per_word", load, 4);
	jw_dbl(&line, "fault_ns_per_page", fault, 4);
	jw_obj_end(&line);
	if (i >= argc) {
		printf("%s\n", line.b.data);
		return 0;
	}
	fprintf(stderr, "swaplab-dilate: %s\n", line.b.data);
	if (kmsg) {
		fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (dprintf(fd, "<5>swaplab-dilate: %s\n",
				    line.b.data) < 0)
				perror("swaplab-dilate: /dev/kmsg");
			close(fd);
		}
	}
	buf_free(&line.b);
	free(chain);
	execvp(argv[i], argv + i);
	fprintf(stderr, "swaplab-dilate: exec %s: %s\n", argv[i],
		strerror(errno));
	return 127;
}
