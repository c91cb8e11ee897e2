/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers: whole-file reads and writes, CRC-32, clocks, logging.
 */
#ifndef AGENT_UTIL_H
#define AGENT_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "jw.h"

/* append the file's contents to @b; 0 or -errno */
int read_file(const char *path, struct buf *b);
/* read a small file into @out (NUL-terminated, trailing newline cut) */
int read_line(const char *path, char *out, size_t size);
/* write @val to @path (a sysfs/procfs knob); 0 or -errno */
int write_knob(const char *path, const char *val);
/* zlib-compatible CRC-32 */
uint32_t crc32_ieee(const void *data, size_t len);
/* CLOCK_BOOTTIME in seconds: time since the guest kernel started */
double uptime_s(void);
double mono_s(void);
/* a line on the console, prefixed "swaplab-agent: " */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
