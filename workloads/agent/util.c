// SPDX-License-Identifier: GPL-2.0
/*
 * Small helpers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int read_file(const char *path, struct buf *b)
{
	char tmp[16384];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		n = read(fd, tmp, sizeof(tmp));
		if (n < 0) {
			int err = errno;

			if (err == EINTR)
				continue;
			close(fd);
			return -err;
		}
		if (n == 0)
			break;
		buf_put(b, tmp, (size_t)n);
	}
	close(fd);
	return 0;
}

int read_line(const char *path, char *out, size_t size)
{
	ssize_t n;
	int fd;

	out[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, out, size - 1);
	if (n < 0) {
		int err = errno;

		close(fd);
		return -err;
	}
	close(fd);
	out[n] = '\0';
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
		out[--n] = '\0';
	return 0;
}

int write_knob(const char *path, const char *val)
{
	size_t len = strlen(val);
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, len);
	if (n < 0) {
		int err = errno;

		close(fd);
		return -err;
	}
	if (close(fd) < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

uint32_t crc32_ieee(const void *data, size_t len)
{
	static uint32_t table[256];
	const unsigned char *p = data;
	uint32_t crc = 0xffffffffu;
	size_t i;

	if (!table[1]) {
		for (i = 0; i < 256; i++) {
			uint32_t c = (uint32_t)i;
			int k;

			for (k = 0; k < 8; k++)
				c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	}
	for (i = 0; i < len; i++)
		crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return crc ^ 0xffffffffu;
}

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double uptime_s(void)
{
	return clock_s(CLOCK_BOOTTIME);
}

double mono_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

void say(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "swaplab-agent: ");
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(2, line, (size_t)n) < 0)
		return;
}
