// SPDX-License-Identifier: GPL-2.0
/*
 * swaplab device model: an nbdkit filter that delays requests the way a
 * rotational disk or an SSD/NVMe drive would, and passes the data through
 * unchanged.
 *
 *   nbdkit --filter=build/devmodel.so file swap.img model=disk ...
 *
 * The model keeps a virtual device clock instead of holding a lock while
 * it sleeps: under a mutex each request is given a completion time from
 * the device's state (the head position and the time the head is free for
 * the disk; the free time of N internal channels and of the transfer
 * "bus" for the SSD); then the data is read or written by the underlying
 * plugin and the thread sleeps until the completion time before replying.
 * A reply is never sent before the plugin finished the operation, so a
 * flush (passed straight through) covers every write acknowledged so far.
 *
 * Disk (model=disk), one request at a time, FIFO:
 *   seek(d) = 0                                 if the request starts where
 *                                               the previous one ended
 *           = s + (tk - s) * sqrt(x / k)        x = d / stroke <  k
 *           = tk + (F - tk) * (x - k) / (1 - k) x >= k
 *   with s = seek_short_ms, F = seek_full_ms, k = seek_knee and
 *   tk = (s (1 - k) + 2 k F) / (1 + k), the value that makes the curve
 *   continuous with a continuous slope at the knee;
 *   rotational latency: half a revolution (30000 / rpm ms) after any seek,
 *   none for an adjacent request;
 *   transfer: bytes / transfer_mb_s.
 *
 * SSD (model=ssd): a request takes the first free of `parallel` channels
 * for read_us (write_us for writes and zeroes), then the transfer over a
 * shared bus at bandwidth_mb_s.
 *
 * All delays are multiplied by scale (time dilation).
 *
 * Faults (any model), per 4 KiB block, sticky the way media errors are:
 *   read_error_rate: the chance that writing a block leaves it unreadable
 *   (a latent sector error); every read touching such a block fails with
 *   EIO until the block is written again.  A random error per request
 *   would not do: the guest's driver retries a failed request (NVMe five
 *   times), so only an error that persists reaches the swap code above
 *   it.  Per block, not per request: the variants differ in how large
 *   their writes are (a THP goes out as one 2 MiB request), and a fault
 *   rate per request would favour the large ones.
 *   write_error_rate: the share of blocks on which every write fails
 *   (a bad spot that never takes data); the failed write stores nothing.
 *   Block 0 (the swap header) is never faulty.  Both draws are hashes of
 *   error_seed, the block and (for reads) how often the block was
 *   written, so a seed gives the same faults whatever order requests
 *   arrive in.  Every injected error is logged with nbdkit_error
 *   ("devmodel: injected EIO ..."), so the lab counts them in nbdkit's
 *   log.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-filter.h>

#define MAX_PARALLEL	256
#define NS_PER_MS	1000000.0
#define NS_PER_US	1000.0

enum model { MODEL_NONE, MODEL_DISK, MODEL_SSD };

static enum model model = MODEL_DISK;
static double scale = 1.0;
/* disk */
static double seek_short_ms = 0.8;
static double seek_full_ms = 8.0;
static double seek_knee = 0.3;
static double rpm = 7200;
static double transfer_mb_s = 150;
static int64_t stroke_bytes;		/* 0: the export size */
/* ssd */
static double read_us = 80;
static double write_us = 20;
static double bandwidth_mb_s = 2000;
static int parallel = 8;
/* faults */
#define BLOCK_SHIFT	12
static double read_error_rate;
static double write_error_rate;
static uint64_t error_seed = 1;
/* per block: UNREADABLE, and the low bits count its writes */
static uint8_t *blocks;
#define UNREADABLE	0x80
#define WRITES_MASK	0x7f

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t dev_size;
/* disk state */
static int64_t head_free_ns;		/* the head is busy until then */
static uint64_t head_pos;		/* end of the previous request */
static bool head_known;
/* ssd state */
static int64_t chan_free_ns[MAX_PARALLEL];
static int64_t bus_free_ns;
/* statistics */
static uint64_t n_requests, n_adjacent, n_read_errors, n_write_errors;
static double busy_ns_total;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t t)
{
	struct timespec ts = { t / 1000000000, t % 1000000000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)
	       == EINTR)
		;
}

static int parse_double(const char *key, const char *value, double *out,
			double min)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(value, &end);
	if (errno || end == value || *end || !(v >= min) || isinf(v)) {
		nbdkit_error("devmodel: %s=%s: expected a number >= %g",
			     key, value, min);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_rate(const char *key, const char *value, double *out)
{
	if (parse_double(key, value, out, 0))
		return -1;
	if (*out > 1) {
		nbdkit_error("devmodel: %s=%s: expected a share from 0 to 1",
			     key, value);
		return -1;
	}
	return 0;
}

static int devmodel_config(nbdkit_next_config *next, nbdkit_backend *nxdata,
			   const char *key, const char *value)
{
	double v;

	if (!strcmp(key, "model")) {
		if (!strcmp(value, "disk") || !strcmp(value, "rotational"))
			model = MODEL_DISK;
		else if (!strcmp(value, "ssd") || !strcmp(value, "nvme"))
			model = MODEL_SSD;
		else if (!strcmp(value, "none"))
			model = MODEL_NONE;
		else {
			nbdkit_error("devmodel: model=%s: expected disk, ssd "
				     "or none", value);
			return -1;
		}
		return 0;
	}
	if (!strcmp(key, "scale"))
		return parse_double(key, value, &scale, 0);
	if (!strcmp(key, "seek_short_ms"))
		return parse_double(key, value, &seek_short_ms, 0);
	if (!strcmp(key, "seek_full_ms"))
		return parse_double(key, value, &seek_full_ms, 0);
	if (!strcmp(key, "seek_knee")) {
		if (parse_double(key, value, &seek_knee, 0.001))
			return -1;
		if (seek_knee >= 1) {
			nbdkit_error("devmodel: seek_knee must be below 1");
			return -1;
		}
		return 0;
	}
	if (!strcmp(key, "rpm"))
		return parse_double(key, value, &rpm, 0);
	if (!strcmp(key, "transfer_mb_s"))
		return parse_double(key, value, &transfer_mb_s, 0.001);
	if (!strcmp(key, "stroke_bytes")) {
		stroke_bytes = nbdkit_parse_size(value);
		return stroke_bytes < 0 ? -1 : 0;
	}
	if (!strcmp(key, "read_us"))
		return parse_double(key, value, &read_us, 0);
	if (!strcmp(key, "write_us"))
		return parse_double(key, value, &write_us, 0);
	if (!strcmp(key, "bandwidth_mb_s"))
		return parse_double(key, value, &bandwidth_mb_s, 0.001);
	if (!strcmp(key, "read_error_rate"))
		return parse_rate(key, value, &read_error_rate);
	if (!strcmp(key, "write_error_rate"))
		return parse_rate(key, value, &write_error_rate);
	if (!strcmp(key, "error_seed"))
		return nbdkit_parse_uint64_t(key, value, &error_seed);
	if (!strcmp(key, "parallel")) {
		if (parse_double(key, value, &v, 1))
			return -1;
		if (v > MAX_PARALLEL || v != (int)v) {
			nbdkit_error("devmodel: parallel must be an integer "
				     "from 1 to %d", MAX_PARALLEL);
			return -1;
		}
		parallel = (int)v;
		return 0;
	}
	return next(nxdata, key, value);
}

#define devmodel_config_help \
	"model=disk|ssd|none        device kind (default disk)\n" \
	"scale=F                    multiply every delay by F (dilation)\n" \
	"seek_short_ms=MS           shortest non-zero seek (0.8)\n" \
	"seek_full_ms=MS            full-stroke seek (8)\n" \
	"seek_knee=X                sqrt/linear knee, fraction of stroke (0.3)\n" \
	"rpm=N                      spindle speed (7200; 0: no rotation)\n" \
	"transfer_mb_s=N            media rate, MB/s = 1e6 B/s (150)\n" \
	"stroke_bytes=SIZE          bytes of a full stroke (export size)\n" \
	"read_us=US                 ssd read latency (80)\n" \
	"write_us=US                ssd write latency (20)\n" \
	"bandwidth_mb_s=N           ssd bandwidth, MB/s (2000)\n" \
	"parallel=N                 ssd requests served at once (8)\n" \
	"read_error_rate=P          chance a block write leaves it unreadable (0)\n" \
	"write_error_rate=P         share of blocks that refuse writes (0)\n" \
	"error_seed=N               seed of the fault choices (1)"

static int devmodel_prepare(nbdkit_next *next, void *handle, int readonly)
{
	int64_t size = next->get_size(next);

	(void)handle;
	(void)readonly;
	if (size < 0)
		return -1;
	pthread_mutex_lock(&lock);
	dev_size = size;
	if (read_error_rate > 0 && !blocks)
		blocks = calloc(((uint64_t)size >> BLOCK_SHIFT) + 1, 1);
	pthread_mutex_unlock(&lock);
	if (read_error_rate > 0 && !blocks) {
		nbdkit_error("devmodel: no memory for the fault map");
		return -1;
	}
	return 0;
}

/* splitmix64: a well-mixed 64-bit value from any input */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* true with probability p for a random x: the top 53 bits of mix(x)
 * are a uniform draw with a double's precision */
static bool chance(uint64_t x, double p)
{
	return (double)(mix(x) >> 11) < p * (double)(1ULL << 53);
}

/* the draws of block b: distinct streams for bad spots and for rot */
static bool bad_spot(uint64_t b)
{
	return chance(mix(error_seed) ^ mix(b), write_error_rate);
}

static bool rots(uint64_t b, unsigned int writes)
{
	return chance(mix(~error_seed) ^ mix(b << 7 | writes),
		      read_error_rate);
}

/* first and last block of a request, block 0 (the header) left out */
static bool blocks_of(uint32_t count, uint64_t offset, uint64_t *first,
		      uint64_t *last)
{
	if (!count)
		return false;
	*first = offset >> BLOCK_SHIFT;
	*last = (offset + count - 1) >> BLOCK_SHIFT;
	if (!*first)
		*first = 1;
	return *first <= *last;
}

/*
 * Is the request to fail?  A write that does not fail rewrites its blocks:
 * each becomes readable again, or unreadable by chance (rots()).
 */
static bool inject(uint32_t count, uint64_t offset, bool write)
{
	uint64_t first, last, b;
	bool fail = false;

	if (!(read_error_rate > 0 || write_error_rate > 0) ||
	    !blocks_of(count, offset, &first, &last))
		return false;
	pthread_mutex_lock(&lock);
	if (write) {
		for (b = first; b <= last && !fail; b++)
			fail = write_error_rate > 0 && bad_spot(b);
		for (b = first; b <= last && !fail && blocks; b++) {
			unsigned int writes = (blocks[b] + 1) & WRITES_MASK;

			blocks[b] = writes | (rots(b, writes) ? UNREADABLE : 0);
		}
		n_write_errors += fail;
	} else if (blocks) {
		for (b = first; b <= last && !fail; b++)
			fail = blocks[b] & UNREADABLE;
		n_read_errors += fail;
	}
	pthread_mutex_unlock(&lock);
	if (fail)
		nbdkit_error("devmodel: injected EIO into %s count=%" PRIu32
			     " offset=%" PRIu64, write ? "pwrite" : "pread",
			     count, offset);
	return fail;
}

/* the seek time in ns for a head movement of `dist` bytes */
static double seek_ns(uint64_t dist)
{
	double stroke = stroke_bytes > 0 ? (double)stroke_bytes
					 : (double)dev_size;
	double s = seek_short_ms, f = seek_full_ms, k = seek_knee;
	double tk = (s * (1 - k) + 2 * k * f) / (1 + k);
	double x, t;

	if (!dist)
		return 0;
	x = stroke > 0 ? (double)dist / stroke : 1;
	if (x > 1)
		x = 1;
	if (x < k)
		t = s + (tk - s) * sqrt(x / k);
	else
		t = tk + (f - tk) * (x - k) / (1 - k);
	return t * NS_PER_MS;
}

/* the completion time of a request (called with the lock held) */
static int64_t schedule(uint32_t count, uint64_t offset, bool write)
{
	int64_t now = now_ns(), start, done;
	double service;
	int i, best;

	n_requests++;
	if (model == MODEL_DISK) {
		uint64_t dist;

		start = head_free_ns > now ? head_free_ns : now;
		dist = !head_known ? (uint64_t)dev_size / 3 :
			offset > head_pos ? offset - head_pos :
			head_pos - offset;
		service = (double)count * 1000.0 / transfer_mb_s;
		if (dist) {
			service += seek_ns(dist);
			if (rpm > 0)
				service += 30000.0 / rpm * NS_PER_MS;
		} else {
			n_adjacent++;
		}
		service *= scale;
		done = start + (int64_t)service;
		head_free_ns = done;
		head_pos = offset + count;
		head_known = true;
		busy_ns_total += service;
		return done;
	}
	/* ssd: the first free channel, then the shared bus */
	best = 0;
	for (i = 1; i < parallel; i++)
		if (chan_free_ns[i] < chan_free_ns[best])
			best = i;
	start = chan_free_ns[best] > now ? chan_free_ns[best] : now;
	start += (int64_t)((write ? write_us : read_us) * NS_PER_US * scale);
	if (bus_free_ns > start)
		start = bus_free_ns;
	done = start + (int64_t)((double)count * 1000.0 / bandwidth_mb_s *
				 scale);
	bus_free_ns = done;
	chan_free_ns[best] = done;
	busy_ns_total += (double)(done - now);
	return done;
}

static int64_t delay_begin(uint32_t count, uint64_t offset, bool write)
{
	int64_t done;

	if (model == MODEL_NONE || scale == 0)
		return 0;
	pthread_mutex_lock(&lock);
	done = schedule(count, offset, write);
	pthread_mutex_unlock(&lock);
	return done;
}

static void delay_end(int64_t done)
{
	if (done)
		sleep_until(done);
}

static int devmodel_pread(nbdkit_next *next, void *handle, void *buf,
			  uint32_t count, uint64_t offset, uint32_t flags,
			  int *err)
{
	int64_t done = delay_begin(count, offset, false);
	int r = -1;

	(void)handle;
	if (inject(count, offset, false))
		*err = EIO;
	else
		r = next->pread(next, buf, count, offset, flags, err);
	delay_end(done);
	return r;
}

static int devmodel_pwrite(nbdkit_next *next, void *handle, const void *buf,
			   uint32_t count, uint64_t offset, uint32_t flags,
			   int *err)
{
	int64_t done = delay_begin(count, offset, true);
	int r = -1;

	(void)handle;
	if (inject(count, offset, true))
		*err = EIO;
	else
		r = next->pwrite(next, buf, count, offset, flags, err);
	delay_end(done);
	return r;
}

static int devmodel_zero(nbdkit_next *next, void *handle, uint32_t count,
			 uint64_t offset, uint32_t flags, int *err)
{
	int64_t done = delay_begin(count, offset, true);
	int r = -1;

	(void)handle;
	if (inject(count, offset, true))
		*err = EIO;
	else
		r = next->zero(next, count, offset, flags, err);
	delay_end(done);
	return r;
}

static void devmodel_unload(void)
{
	if (n_requests)
		nbdkit_debug("devmodel: %" PRIu64 " requests, %" PRIu64
			     " adjacent, %.3f s modelled",
			     n_requests, n_adjacent, busy_ns_total / 1e9);
	if (n_read_errors || n_write_errors)
		nbdkit_debug("devmodel: injected %" PRIu64 " read and %" PRIu64
			     " write errors", n_read_errors, n_write_errors);
	free(blocks);
}

static int devmodel_is_rotational(nbdkit_next *next, void *handle)
{
	(void)handle;
	if (model == MODEL_DISK)
		return 1;
	if (model == MODEL_SSD)
		return 0;
	return next->is_rotational(next);
}

static struct nbdkit_filter filter = {
	.name		= "devmodel",
	.longname	= "swaplab device model (disk / ssd latency)",
	.config		= devmodel_config,
	.config_help	= devmodel_config_help,
	.unload		= devmodel_unload,
	.prepare	= devmodel_prepare,
	.is_rotational	= devmodel_is_rotational,
	.pread		= devmodel_pread,
	.pwrite		= devmodel_pwrite,
	.zero		= devmodel_zero,
};

NBDKIT_REGISTER_FILTER(filter)
