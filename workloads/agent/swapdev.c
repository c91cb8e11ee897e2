// SPDX-License-Identifier: GPL-2.0
/*
 * Swap device preparation and facts.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>

#include "swapdev.h"
#include "swapfile.h"
#include "util.h"

#define SWAP_MAGIC	"SWAPSPACE2"
#define SWAP_MAGIC_LEN	10

/* layout of the first page, as in include/linux/swap.h */
struct swap_info_hdr {
	uint32_t version;
	uint32_t last_page;
	uint32_t nr_badpages;
	unsigned char uuid[16];
	unsigned char volume[16];
};

static int wait_for(const char *path, int wait_s)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	double until = mono_s() + wait_s;
	struct stat st;

	while (stat(path, &st) < 0) {
		if (mono_s() >= until)
			return -errno;
		nanosleep(&ts, NULL);
	}
	return S_ISBLK(st.st_mode) ? 0 : -ENOTBLK;
}

/* a swap header on the block device or regular file @dev */
static int mkswap(const char *dev, unsigned long long max_kib,
		  unsigned long long *bytes, unsigned long *pages)
{
	long psz = sysconf(_SC_PAGESIZE);
	struct swap_info_hdr hdr;
	unsigned long long n;
	unsigned char *page;
	struct stat st;
	int fd, err = 0;

	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		*bytes = (unsigned long long)st.st_size;
	} else if (ioctl(fd, BLKGETSIZE64, bytes) < 0) {
		err = -errno;
		goto out;
	}
	n = *bytes;
	if (max_kib && max_kib * 1024 < n)
		n = max_kib * 1024;
	n /= (unsigned long long)psz;
	if (n < 10 || n - 1 > UINT32_MAX) {
		err = -ENOSPC;
		goto out;
	}
	*pages = (unsigned long)n;
	page = calloc(1, (size_t)psz);
	if (!page) {
		err = -ENOMEM;
		goto out;
	}
	memset(&hdr, 0, sizeof(hdr));
	hdr.version = 1;
	hdr.last_page = (uint32_t)(n - 1);
	if (getrandom(hdr.uuid, sizeof(hdr.uuid), GRND_NONBLOCK) < 0)
		memset(hdr.uuid, 0x5a, sizeof(hdr.uuid));
	memcpy(hdr.volume, "swaplab", 7);
	memcpy(page + 1024, &hdr, sizeof(hdr));
	memcpy(page + psz - SWAP_MAGIC_LEN, SWAP_MAGIC, SWAP_MAGIC_LEN);
	if (pwrite(fd, page, (size_t)psz, 0) != psz)
		err = errno ? -errno : -EIO;
	else if (fsync(fd) < 0)
		err = -errno;
	free(page);
out:
	close(fd);
	return err;
}

int klog_read(struct buf *b)
{
	int size = klogctl(10, NULL, 0);	/* SYSLOG_ACTION_SIZE_BUFFER */
	char *tmp;
	int n;

	if (size <= 0)
		size = 1 << 20;
	tmp = malloc((size_t)size);
	if (!tmp)
		return -ENOMEM;
	n = klogctl(3, tmp, size);		/* SYSLOG_ACTION_READ_ALL */
	if (n < 0) {
		int err = -errno;

		free(tmp);
		return err;
	}
	buf_put(b, tmp, (size_t)n);
	free(tmp);
	return 0;
}

/* the last "Adding ...k swap on DEV." line of the kernel log */
static void swapon_line(struct jw *w)
{
	struct buf b = { 0 };
	char *line, *next, *found = NULL;

	if (klog_read(&b) == 0 && b.data) {
		for (line = b.data; line; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			if (strstr(line, "Adding ") && strstr(line, " swap on "))
				found = line;
		}
	}
	if (found && found[0] == '<') {
		char *gt = strchr(found, '>');

		if (gt)
			found = gt + 1;
	}
	jw_str(w, "swapon_line", found);
	buf_free(&b);
}

static const char *const queue_files[] = {
	"rotational", "max_hw_sectors_kb", "max_sectors_kb", "max_segments",
	"logical_block_size", "physical_block_size", "nomerges",
	"scheduler", "dax", "nr_requests", "read_ahead_kb", "write_cache",
	"discard_max_bytes", "add_random", NULL,
};

static void block_facts(struct jw *w, const char *name)
{
	char path[PATH_MAX], val[512];
	int i;

	snprintf(path, sizeof(path), "/sys/block/%.64s/size", name);
	if (read_line(path, val, sizeof(val)) == 0)
		jw_u64(w, "size_sectors", strtoull(val, NULL, 10));
	snprintf(path, sizeof(path), "/sys/block/%.64s/device/model", name);
	if (read_line(path, val, sizeof(val)) == 0)
		jw_str(w, "model", val);
	jw_obj_begin(w, "queue");
	for (i = 0; queue_files[i]; i++) {
		snprintf(path, sizeof(path), "/sys/block/%.64s/queue/%.64s", name,
			 queue_files[i]);
		if (read_line(path, val, sizeof(val)) == 0)
			jw_str(w, queue_files[i], val);
	}
	jw_obj_end(w);
}

#define ND "/sys/bus/nd"

/*
 * Turn the raw namespace behind a /dev/pmemN into fsdax: a pfn device
 * with struct pages stored on the device itself, as
 * `ndctl create-namespace -f -e namespaceX.Y -m fsdax` does on a
 * label-less NVDIMM.  The disk reappears under the same name with
 * queue/dax = 1.
 */
static int pmem_fsdax(struct jw *w, const char *name, int wait_s, char *err,
		      size_t errsize)
{
	char path[PATH_MAX], real[PATH_MAX], region[PATH_MAX], seed[64];
	char ns[64], val[64];
	unsigned char u[16];
	const char *step;
	char *slash;
	int ret;

	snprintf(path, sizeof(path), "/sys/block/%.64s/queue/dax", name);
	if (read_line(path, val, sizeof(val)) == 0 && !strcmp(val, "1")) {
		jw_str(w, "pmem_namespace", "already dax");
		return 0;
	}
	snprintf(path, sizeof(path), "/sys/block/%.64s/device", name);
	if (!realpath(path, real)) {
		snprintf(err, errsize, "fsdax: %s: %s", path, strerror(errno));
		return -errno;
	}
	slash = strrchr(real, '/');
	if (!slash || strncmp(slash + 1, "namespace", 9)) {
		snprintf(err, errsize, "fsdax: %s is not a raw namespace", real);
		return -EINVAL;
	}
	snprintf(ns, sizeof(ns), "%.63s", slash + 1);
	*slash = '\0';
	snprintf(region, sizeof(region), "%s", real);
	snprintf(path, sizeof(path), "%.4000s/pfn_seed", region);
	step = "pfn_seed";
	ret = read_line(path, seed, sizeof(seed));
	if (ret)
		goto fail;
	step = "unbind";
	ret = write_knob(ND "/drivers/nd_pmem/unbind", ns);
	if (ret)
		goto fail;
	step = "uuid";
	if (getrandom(u, sizeof(u), GRND_NONBLOCK) < 0)
		memset(u, 0x5a, sizeof(u));
	u[6] = (unsigned char)((u[6] & 0x0f) | 0x40);
	u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
	snprintf(val, sizeof(val), "%02x%02x%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
		 u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
	snprintf(path, sizeof(path), ND "/devices/%s/uuid", seed);
	ret = write_knob(path, val);
	if (ret)
		goto fail;
	step = "namespace";
	snprintf(path, sizeof(path), ND "/devices/%s/namespace", seed);
	ret = write_knob(path, ns);
	if (ret)
		goto fail;
	step = "mode";
	snprintf(path, sizeof(path), ND "/devices/%s/mode", seed);
	ret = write_knob(path, "pmem");
	if (ret)
		goto fail;
	step = "bind";
	ret = write_knob(ND "/drivers/nd_pmem/bind", seed);
	if (ret)
		goto fail;
	snprintf(path, sizeof(path), "/dev/%.64s", name);
	ret = wait_for(path, wait_s);
	if (ret) {
		step = "the disk did not come back";
		goto fail;
	}
	jw_str(w, "pmem_namespace", "fsdax");
	jw_str(w, "pmem_pfn", seed);
	return 0;
fail:
	snprintf(err, errsize, "fsdax: %s (%s, %s): %s", step, ns, seed,
		 strerror(-ret));
	return ret;
}

/* the zram device's name from its path: /dev/zram0 -> zram0 */
static const char *base_name(const char *dev)
{
	return strrchr(dev, '/') ? strrchr(dev, '/') + 1 : dev;
}

/*
 * A fresh zram device: its compressor, then its size (the kernel takes
 * the compressor only before the size, and the size only once).
 */
static int zram_setup(struct jw *w, const char *name, const char *comp,
		      unsigned long long max_kib, char *err, size_t errsize)
{
	char path[PATH_MAX], val[256];
	int ret;

	if (!max_kib) {
		snprintf(err, errsize, "zram %s: no size (swap_kib)", name);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "/sys/block/%.64s/comp_algorithm", name);
	ret = write_knob(path, comp);
	if (ret) {
		snprintf(err, errsize, "zram %s: compressor %s: %s", name,
			 comp, strerror(-ret));
		return ret;
	}
	snprintf(val, sizeof(val), "%llu", max_kib * 1024);
	snprintf(path, sizeof(path), "/sys/block/%.64s/disksize", name);
	ret = write_knob(path, val);
	if (ret) {
		snprintf(err, errsize, "zram %s: disksize %s: %s", name, val,
			 strerror(-ret));
		return ret;
	}
	jw_obj_begin(w, "zram");
	snprintf(path, sizeof(path), "/sys/block/%.64s/comp_algorithm", name);
	if (read_line(path, val, sizeof(val)) == 0)
		jw_str(w, "comp_algorithm", val);
	snprintf(path, sizeof(path), "/sys/block/%.64s/disksize", name);
	if (read_line(path, val, sizeof(val)) == 0)
		jw_u64(w, "disksize", strtoull(val, NULL, 10));
	jw_obj_end(w);
	return 0;
}

void zram_sample(struct zram_peak *peak, const char *dev)
{
	unsigned long long f[8] = { 0 };
	char path[PATH_MAX], val[512];

	snprintf(path, sizeof(path), "/sys/block/%.64s/mm_stat",
		 base_name(dev));
	if (read_line(path, val, sizeof(val)) ||
	    sscanf(val, "%llu %llu %llu %llu %llu %llu %llu %llu", &f[0],
		   &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7]) < 6)
		return;
	peak->samples++;
	peak->max_used_bytes = f[4];
	if (f[0] + f[5] * 4096 < peak->orig_bytes + peak->same_pages * 4096)
		return;
	peak->orig_bytes = f[0];
	peak->compr_bytes = f[1];
	peak->used_bytes = f[2];
	peak->same_pages = f[5];
	peak->huge_pages = f[7];
}

void zram_report(struct jw *w, const struct zram_peak *peak)
{
	jw_obj_begin(w, "zram_peak");
	jw_i64(w, "samples", peak->samples);
	jw_u64(w, "orig_data_size", peak->orig_bytes);
	jw_u64(w, "compr_data_size", peak->compr_bytes);
	jw_u64(w, "mem_used_total", peak->used_bytes);
	jw_u64(w, "same_pages", peak->same_pages);
	jw_u64(w, "huge_pages", peak->huge_pages);
	jw_u64(w, "mem_used_max", peak->max_used_bytes);
	jw_obj_end(w);
}

int swapdev_setup(struct jw *w, const struct conf *c, char *err,
		  size_t errsize)
{
	const char *dev = c->device, *swap_file = c->swap_file;
	unsigned long long max_kib = c->swap_kib;
	int wait_s = c->device_wait_s;
	unsigned long long bytes = 0;
	unsigned long pages = 0;
	char real[PATH_MAX];
	struct buf swaps = { 0 };
	const char *name, *area = dev;
	double t0;
	int ret;

	jw_obj_begin(w, "device");
	jw_str(w, "path", dev);
	ret = wait_for(dev, wait_s);
	if (ret) {
		snprintf(err, errsize, "device %s did not appear within %d s: %s",
			 dev, wait_s, strerror(-ret));
		goto out;
	}
	if (!realpath(dev, real))
		snprintf(real, sizeof(real), "%s", dev);
	name = base_name(real);
	jw_str(w, "name", name);
	if (c->pmem_fsdax) {
		ret = pmem_fsdax(w, name, wait_s, err, errsize);
		if (ret)
			goto out;
	}
	if (c->zram_comp) {
		ret = zram_setup(w, name, c->zram_comp, max_kib, err, errsize);
		if (ret)
			goto out;
	}
	block_facts(w, name);
	if (swap_file) {
		ret = swapfile_make(w, dev, max_kib,
				    !strcmp(swap_file, "fragmented"), err,
				    errsize);
		if (ret)
			goto out;
		area = SWAPFILE_PATH;
	}
	ret = mkswap(area, max_kib, &bytes, &pages);
	jw_u64(w, "size_bytes", bytes);
	if (ret) {
		snprintf(err, errsize, "mkswap %s: %s", area, strerror(-ret));
		goto out;
	}
	jw_u64(w, "swap_pages", pages);
	t0 = mono_s();
	if (swapon(area, 0) < 0) {
		ret = -errno;
		snprintf(err, errsize, "swapon %s: %s", area, strerror(errno));
		goto out;
	}
	jw_real(w, "swapon_s", mono_s() - t0);
	swapon_line(w);
	if (read_file("/proc/swaps", &swaps) == 0 && swaps.data)
		jw_str(w, "proc_swaps", swaps.data);
	buf_free(&swaps);
out:
	jw_obj_end(w);
	return ret;
}
