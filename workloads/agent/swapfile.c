// SPDX-License-Identifier: GPL-2.0
/*
 * Swap on a file on the swap drive (see swapfile.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "swapfile.h"
#include "util.h"

#define FILL_DIR	SWAPFILE_DIR "/fill"
/*
 * Filler file size: the swap file is written into the holes that every
 * other one leaves, so its extents are at most this long (32 slots) and
 * no 2 MiB range of slots is contiguous on the drive.
 */
#define FILL_BYTES	(128u << 10)
#define CHUNK_BYTES	(1u << 20)
/* room kept free so that the file system's own metadata never runs out */
#define SLACK_BYTES	(8ull << 20)

static unsigned int nfill;	/* filler files written (even ones kept) */

/* /bin/busybox mke2fs ...; 0 or -errno */
static int run(char *const argv[], char *err, size_t errsize)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		/* its chatter off the console; errors stay on stderr */
		if (null >= 0)
			dup2(null, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	snprintf(err, errsize, "%s %s: exit status %d", argv[0], argv[1],
		 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return -EIO;
}

/* filler file @index's word @i: its own, so a misplaced block shows */
static uint64_t fill_word(unsigned int index, size_t i)
{
	return ((uint64_t)index << 32 | i) ^ 0x5a5a0f0f00ffff00ull;
}

static void fill_block(uint64_t *words, unsigned int index)
{
	size_t i;

	for (i = 0; i < FILL_BYTES / sizeof(*words); i++)
		words[i] = fill_word(index, i);
}

static void fill_path(char *path, size_t size, unsigned int index)
{
	snprintf(path, size, FILL_DIR "/%06u", index);
}

/*
 * A file of @len bytes from @data; 0 or -errno.  Not synced one by one:
 * each file is written whole, so whenever its blocks are allocated they
 * sit together, after the previous file's.
 */
static int write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int ret = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, data, len);
	if (n < 0)
		ret = -errno;
	else if ((size_t)n < len)
		ret = -ENOSPC;		/* a short write: the disk is full */
	if (close(fd) < 0 && !ret)
		ret = -errno;
	return ret;
}

/* fill the file system, then free every other file: 0 or -errno */
static int fragment(char *err, size_t errsize)
{
	char path[64];
	uint64_t *block = malloc(FILL_BYTES);
	unsigned int i;
	int ret = 0;

	if (!block)
		return -ENOMEM;
	if (mkdir(FILL_DIR, 0700) < 0) {
		free(block);
		return -errno;
	}
	for (nfill = 0;; nfill++) {
		fill_block(block, nfill);
		fill_path(path, sizeof(path), nfill);
		ret = write_file(path, block, FILL_BYTES);
		if (ret) {
			unlink(path);	/* the partial one */
			break;
		}
	}
	free(block);
	if (ret != -ENOSPC) {
		snprintf(err, errsize, "filling %s: %s", FILL_DIR,
			 strerror(-ret));
		return ret;
	}
	for (i = 1; i < nfill; i += 2) {
		fill_path(path, sizeof(path), i);
		if (unlink(path) < 0) {
			snprintf(err, errsize, "unlink %s: %s", path,
				 strerror(errno));
			return -errno;
		}
	}
	sync();
	return 0;
}

/* the swap file, written out (a swap file may have no holes) */
static int write_swapfile(unsigned long long bytes, char *err,
			  size_t errsize)
{
	int fd = open(SWAPFILE_PATH, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		      0600);
	char *chunk = calloc(1, CHUNK_BYTES);
	unsigned long long done = 0;
	int ret = 0;

	if (fd < 0 || !chunk) {
		ret = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	while (done < bytes) {
		size_t n = bytes - done < CHUNK_BYTES ? bytes - done :
			   CHUNK_BYTES;
		ssize_t w = write(fd, chunk, n);

		if (w < 0 || (size_t)w < n) {
			ret = w < 0 ? -errno : -ENOSPC;
			goto out;
		}
		done += n;
	}
	if (fsync(fd) < 0)
		ret = -errno;
out:
	if (ret)
		snprintf(err, errsize, "writing %s: %s", SWAPFILE_PATH,
			 strerror(-ret));
	if (fd >= 0)
		close(fd);
	free(chunk);
	return ret;
}

int swapfile_make(struct jw *w, const char *dev, unsigned long long max_kib,
		  bool fragmented, char *err, size_t errsize)
{
	char *mke2fs[] = { "/bin/busybox", "mke2fs", "-q", "-F", "-b", "4096",
			   "-m", "0", (char *)dev, NULL };
	unsigned long long bytes;
	struct statvfs vfs;
	int ret;

	jw_obj_begin(w, "swap_file");
	jw_str(w, "path", SWAPFILE_PATH);
	jw_bool(w, "fragmented", fragmented);
	ret = run(mke2fs, err, errsize);
	if (ret)
		goto out;
	if (mkdir(SWAPFILE_DIR, 0700) < 0 && errno != EEXIST) {
		ret = -errno;
		snprintf(err, errsize, "mkdir %s: %s", SWAPFILE_DIR,
			 strerror(errno));
		goto out;
	}
	if (mount(dev, SWAPFILE_DIR, "ext4", 0, NULL) < 0) {
		ret = -errno;
		snprintf(err, errsize, "mount %s on %s (ext4 driver): %s", dev,
			 SWAPFILE_DIR, strerror(errno));
		goto out;
	}
	if (fragmented) {
		ret = fragment(err, errsize);
		if (ret)
			goto out;
		jw_u64(w, "filler_files", (nfill + 1) / 2);
		jw_u64(w, "filler_file_bytes", FILL_BYTES);
	}
	if (statvfs(SWAPFILE_DIR, &vfs) < 0) {
		ret = -errno;
		snprintf(err, errsize, "statvfs: %s", strerror(errno));
		goto out;
	}
	bytes = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
	bytes = bytes > SLACK_BYTES ? bytes - SLACK_BYTES : 0;
	if (max_kib && max_kib * 1024 < bytes)
		bytes = max_kib * 1024;
	bytes &= ~(unsigned long long)(CHUNK_BYTES - 1);
	jw_u64(w, "size_bytes", bytes);
	ret = write_swapfile(bytes, err, errsize);
out:
	jw_obj_end(w);
	return ret;
}

void swapfile_check(struct jw *w)
{
	uint64_t *want = malloc(FILL_BYTES), *have = malloc(FILL_BYTES);
	unsigned int i, files = 0, bad = 0, unreadable = 0;
	char path[64];

	jw_obj_begin(w, "swap_file_check");
	if (!want || !have) {
		jw_str(w, "error", "no memory");
		goto out;
	}
	sync();
	/* the blocks, not what the page cache kept of them */
	if (write_knob("/proc/sys/vm/drop_caches", "3"))
		jw_str(w, "warning", "drop_caches failed: read from cache");
	for (i = 0; i < nfill; i += 2) {
		int fd;
		ssize_t n;

		fill_path(path, sizeof(path), i);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd < 0 ? -1 : read(fd, have, FILL_BYTES);
		if (fd >= 0)
			close(fd);
		files++;
		if (n != FILL_BYTES) {
			unreadable++;
			continue;
		}
		fill_block(want, i);
		if (memcmp(want, have, FILL_BYTES)) {
			if (!bad)
				jw_str(w, "first_bad", path);
			bad++;
		}
	}
	jw_u64(w, "files", files);
	jw_u64(w, "bad", bad);
	jw_u64(w, "unreadable", unreadable);
out:
	jw_obj_end(w);
	free(want);
	free(have);
}
