// SPDX-License-Identifier: GPL-2.0
/*
 * swaplab-probe: what the swap device really is, measured in the guest.
 *
 * A small fio: O_DIRECT pread/pwrite from N threads (queue depth N),
 * random or sequential, for a time or byte budget per test; one JSON
 * document on stdout (schema swaplab-probe/1) with per-test latency
 * percentiles and throughput.
 *
 *   swaplab-probe [--device DEV] [--runtime-ms MS] [--max-mib MIB]
 *                 [--tests all|quick|NAME,...] [--dilation F] [--keep-swap]
 *
 * DEV defaults to the first device in /proc/swaps. A device in use as
 * swap is taken out of use for the probe (swapoff), its first page (the
 * swap header) is saved, and after the probe the header is written back
 * and the device swapped on again, so a workload can follow (nothing is
 * in swap before the workload: the probe's writes destroy no data).
 * Sequential tests at depth > 1 share one offset counter: the requests
 * in flight are adjacent, as readahead and swap-out clusters make them.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/swap.h>
#include <time.h>
#include <unistd.h>

#include "jw.h"
#include "parse.h"

#define KIB		1024ULL
#define MIB		(1024ULL * 1024)
#define MAX_QD		64
#define MAX_SAMPLES	(1u << 18)

struct test {
	const char *name;
	bool write;
	bool seq;
	uint32_t bs;
	int qd;
	bool quick;		/* in the `quick` set */
};

static const struct test tests[] = {
	{ "randread-4k-qd1",    false, false, 4 * KIB, 1,  true },
	{ "randread-32k-qd1",   false, false, 32 * KIB, 1, true },
	{ "randread-4k-qd32",   false, false, 4 * KIB, 32, true },
	{ "seqread-4k-qd1",     false, true,  4 * KIB, 1,  true },
	{ "seqread-4k-qd32",    false, true,  4 * KIB, 32, false },
	{ "randread-2m-qd1",    false, false, 2 * MIB, 1,  false },
	{ "randread-2m-qd32",   false, false, 2 * MIB, 32, false },
	{ "seqread-2m-qd1",     false, true,  2 * MIB, 1,  true },
	{ "seqread-2m-qd32",    false, true,  2 * MIB, 32, false },
	{ "randwrite-4k-qd1",   true,  false, 4 * KIB, 1,  true },
	{ "randwrite-4k-qd32",  true,  false, 4 * KIB, 32, false },
	{ "seqwrite-4k-qd1",    true,  true,  4 * KIB, 1,  false },
	{ "seqwrite-4k-qd32",   true,  true,  4 * KIB, 32, false },
	{ "randwrite-2m-qd1",   true,  false, 2 * MIB, 1,  false },
	{ "randwrite-2m-qd32",  true,  false, 2 * MIB, 32, false },
	{ "seqwrite-2m-qd1",    true,  true,  2 * MIB, 1,  true },
	{ "seqwrite-2m-qd32",   true,  true,  2 * MIB, 32, false },
};
#define NTESTS (sizeof(tests) / sizeof(tests[0]))

struct run {
	const struct test *t;
	int fd;
	uint64_t size;			/* device bytes used */
	double deadline;
	uint64_t max_ops;
	atomic_uint_fast64_t issued;
	atomic_uint_fast64_t seq_next;
	atomic_int error;
	pthread_mutex_t lock;
	double *lat;			/* ns, all threads */
	uint32_t nlat;
	uint64_t ops, bytes;
	double last_done;
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct worker {
	struct run *r;
	int index;
	pthread_t tid;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->r;
	const struct test *t = r->t;
	uint64_t seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(w->index + 1) ^
			(uint64_t)t->bs ^ (uint64_t)now_ns();
	uint64_t slots = r->size / t->bs, off;
	double t0, t1;
	void *buf;
	ssize_t n;

	if (posix_memalign(&buf, 4096, t->bs)) {
		atomic_store(&r->error, ENOMEM);
		return NULL;
	}
	memset(buf, 0x5a ^ w->index, t->bs);
	while (!atomic_load(&r->error)) {
		if (atomic_fetch_add(&r->issued, 1) >= r->max_ops)
			break;
		if (now_ns() >= r->deadline)
			break;
		if (t->seq)
			off = atomic_fetch_add(&r->seq_next, t->bs) %
			      (slots * t->bs);
		else
			off = xorshift(&seed) % slots * t->bs;
		t0 = now_ns();
		if (t->write)
			n = pwrite(r->fd, buf, t->bs, (off_t)off);
		else
			n = pread(r->fd, buf, t->bs, (off_t)off);
		t1 = now_ns();
		if (n != (ssize_t)t->bs) {
			atomic_store(&r->error, n < 0 ? errno : EIO);
			break;
		}
		pthread_mutex_lock(&r->lock);
		if (r->nlat < MAX_SAMPLES)
			r->lat[r->nlat++] = t1 - t0;
		r->ops++;
		r->bytes += t->bs;
		if (t1 > r->last_done)
			r->last_done = t1;
		pthread_mutex_unlock(&r->lock);
	}
	free(buf);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, uint32_t n, double p)
{
	uint32_t i;

	if (!n)
		return 0;
	i = (uint32_t)(p / 100.0 * n + 0.999999);
	if (i < 1)
		i = 1;
	if (i > n)
		i = n;
	return v[i - 1];
}

static int run_test(struct jw *j, const struct test *t, int fd,
		    uint64_t size, double runtime_ms, uint64_t max_mib,
		    double dilation)
{
	struct worker w[MAX_QD];
	struct run r;
	double start, secs, sum = 0;
	uint32_t i;
	int k;

	memset(&r, 0, sizeof(r));
	r.t = t;
	r.fd = fd;
	r.size = size;
	r.max_ops = max_mib * MIB / t->bs;
	if (r.max_ops < (uint64_t)t->qd)
		r.max_ops = (uint64_t)t->qd;
	pthread_mutex_init(&r.lock, NULL);
	r.lat = malloc(MAX_SAMPLES * sizeof(double));
	if (!r.lat)
		return -ENOMEM;
	/* sequential tests start at a random point, away from the last */
	r.seq_next = (uint64_t)now_ns() % (size / 2) / t->bs * t->bs;
	start = now_ns();
	r.deadline = start + runtime_ms * 1e6;
	r.last_done = start;
	for (k = 0; k < t->qd; k++) {
		w[k].r = &r;
		w[k].index = k;
		if (pthread_create(&w[k].tid, NULL, worker_main, &w[k])) {
			atomic_store(&r.error, EAGAIN);
			break;
		}
	}
	while (k-- > 0)
		pthread_join(w[k].tid, NULL);
	secs = (r.last_done - start) / 1e9;
	qsort(r.lat, r.nlat, sizeof(double), cmp_double);
	for (i = 0; i < r.nlat; i++)
		sum += r.lat[i];
	jw_obj_begin(j, NULL);
	jw_str(j, "name", t->name);
	jw_str(j, "rw", t->write ? "write" : "read");
	jw_str(j, "pattern", t->seq ? "seq" : "rand");
	jw_u64(j, "bs", t->bs);
	jw_i64(j, "qd", t->qd);
	jw_u64(j, "ops", r.ops);
	jw_u64(j, "bytes", r.bytes);
	jw_dbl(j, "seconds", secs, 6);
	jw_dbl(j, "iops", secs > 0 ? r.ops / secs : 0, 2);
	jw_dbl(j, "mb_s", secs > 0 ? r.bytes / secs / 1e6 : 0, 3);
	jw_obj_begin(j, "lat_us");
	jw_dbl(j, "mean", r.nlat ? sum / r.nlat / 1e3 : 0, 2);
	jw_dbl(j, "min", r.nlat ? r.lat[0] / 1e3 : 0, 2);
	jw_dbl(j, "p50", pct(r.lat, r.nlat, 50) / 1e3, 2);
	jw_dbl(j, "p90", pct(r.lat, r.nlat, 90) / 1e3, 2);
	jw_dbl(j, "p99", pct(r.lat, r.nlat, 99) / 1e3, 2);
	jw_dbl(j, "max", r.nlat ? r.lat[r.nlat - 1] / 1e3 : 0, 2);
	jw_obj_end(j);
	if (dilation > 0) {
		jw_obj_begin(j, "undilated");
		jw_dbl(j, "mean_us", r.nlat ? sum / r.nlat / 1e3 / dilation : 0,
		       3);
		jw_dbl(j, "p50_us", pct(r.lat, r.nlat, 50) / 1e3 / dilation, 3);
		jw_dbl(j, "mb_s", secs > 0 ? r.bytes / secs / 1e6 * dilation : 0,
		       3);
		jw_dbl(j, "iops", secs > 0 ? r.ops / secs * dilation : 0, 2);
		jw_obj_end(j);
	}
	if (atomic_load(&r.error))
		jw_str(j, "error", strerror(atomic_load(&r.error)));
	jw_obj_end(j);
	free(r.lat);
	pthread_mutex_destroy(&r.lock);
	return 0;
}

static int first_swap(char *out, size_t len)
{
	FILE *f = fopen("/proc/swaps", "r");
	char line[512];
	int found = -1;

	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f)) {	/* header */
		if (fgets(line, sizeof(line), f) &&
		    sscanf(line, "%255s", out) == 1 && len > 255)
			found = 0;
	}
	fclose(f);
	return found;
}

static bool is_swap(const char *dev)
{
	FILE *f = fopen("/proc/swaps", "r");
	char line[512], name[256];
	bool yes = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%255s", name) == 1 && !strcmp(name, dev))
			yes = true;
	fclose(f);
	return yes;
}

static bool selected(const struct test *t, const char *list)
{
	char buf[1024], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "all") || !strcmp(tok, t->name) ||
		    (!strcmp(tok, "quick") && t->quick))
			return true;
	}
	return false;
}

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--device DEV] [--runtime-ms MS] "
		"[--max-mib MIB] [--tests all|quick|NAME,...] [--dilation F] "
		"[--keep-swap] [--list]\n", argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	char dev[256] = "";
	const char *list = "all";
	double runtime_ms = 500, dilation = 0, t0;
	uint64_t max_mib = 64, size = 0;
	bool keep_swap = false, was_swap;
	void *header = NULL;
	struct jw j;
	int fd, i, ret = 0;
	size_t k;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--device") && i + 1 < argc) {
			snprintf(dev, sizeof(dev), "%s", argv[++i]);
		} else if (!strcmp(argv[i], "--runtime-ms") && i + 1 < argc) {
			if (parse_pos_double(argv[++i], 3600e3, &runtime_ms))
				usage(argv[0]);
		} else if (!strcmp(argv[i], "--max-mib") && i + 1 < argc) {
			if (parse_u64(argv[++i], 1, 1 << 20, &max_mib))
				usage(argv[0]);
		} else if (!strcmp(argv[i], "--tests") && i + 1 < argc) {
			list = argv[++i];
		} else if (!strcmp(argv[i], "--dilation") && i + 1 < argc) {
			if (parse_pos_double(argv[++i], 1e6, &dilation))
				usage(argv[0]);
		} else if (!strcmp(argv[i], "--keep-swap")) {
			keep_swap = true;
		} else if (!strcmp(argv[i], "--list")) {
			for (k = 0; k < NTESTS; k++)
				printf("%s%s\n", tests[k].name,
				       tests[k].quick ? " (quick)" : "");
			return 0;
		} else {
			usage(argv[0]);
		}
	}
	if (!dev[0] && first_swap(dev, sizeof(dev))) {
		fprintf(stderr, "swaplab-probe: no --device and no swap in "
			"/proc/swaps\n");
		return 2;
	}
	was_swap = is_swap(dev);
	if (was_swap) {
		if (keep_swap) {
			fprintf(stderr, "swaplab-probe: %s is in use as swap "
				"(drop --keep-swap)\n", dev);
			return 2;
		}
		fd = open(dev, O_RDONLY | O_DIRECT);
		if (fd < 0 || posix_memalign(&header, 4096, 4096) ||
		    pread(fd, header, 4096, 0) != 4096) {
			perror("swaplab-probe: saving the swap header");
			return 1;
		}
		close(fd);
		if (swapoff(dev)) {
			perror("swaplab-probe: swapoff");
			return 1;
		}
	}
	fd = open(dev, O_RDWR | O_DIRECT);
	if (fd < 0 || ioctl(fd, BLKGETSIZE64, &size) || size < 64 * MIB) {
		fprintf(stderr, "swaplab-probe: %s: %s\n", dev,
			fd < 0 ? strerror(errno) : "too small or no size");
		return 1;
	}
	size = size / (2 * MIB) * (2 * MIB);
	t0 = now_ns();
	jw_init(&j, stdout);
	jw_obj_begin(&j, NULL);
	jw_str(&j, "schema", "swaplab-probe/1");
	jw_str(&j, "device", dev);
	jw_u64(&j, "size_bytes", size);
	jw_dbl(&j, "runtime_ms", runtime_ms, 0);
	jw_u64(&j, "max_mib", max_mib);
	if (dilation > 0)
		jw_dbl(&j, "dilation", dilation, 4);
	else
		jw_null(&j, "dilation");
	jw_bool(&j, "was_swap", was_swap);
	jw_arr_begin(&j, "tests");
	for (k = 0; k < NTESTS; k++) {
		if (!selected(&tests[k], list))
			continue;
		ret = run_test(&j, &tests[k], fd, size, runtime_ms, max_mib,
			       dilation);
		if (ret)
			break;
		fflush(stdout);
	}
	jw_arr_end(&j);
	jw_dbl(&j, "probe_s", (now_ns() - t0) / 1e9, 3);
	if (was_swap) {
		if (pwrite(fd, header, 4096, 0) != 4096 || fsync(fd)) {
			ret = -errno;
			jw_bool(&j, "swap_restored", false);
		} else {
			close(fd);
			fd = -1;
			ret = swapon(dev, 0) ? -errno : 0;
			jw_bool(&j, "swap_restored", !ret);
		}
	}
	jw_str(&j, "status", ret ? "error" : "ok");
	jw_obj_end(&j);
	jw_finish(&j);
	if (fd >= 0)
		close(fd);
	free(header);
	return ret ? 1 : 0;
}
