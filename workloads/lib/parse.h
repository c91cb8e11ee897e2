/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Strict parsing of option values, shared by the workloads: a value is
 * taken whole or refused (-1), never read in part.
 */
#ifndef SWAPLAB_PARSE_H
#define SWAPLAB_PARSE_H

#include <stdint.h>

/* a decimal, hex (0x) or octal (0) integer in [lo, hi] */
int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *v);
/* an integer in [1, hi] */
int parse_uint(const char *s, unsigned int hi, unsigned int *v);
/* a finite number in (0, hi] */
int parse_pos_double(const char *s, double hi, double *v);
/* a finite number in [0, hi]: a share, where 0 means none */
int parse_share(const char *s, double hi, double *v);
/* "4096", "64M", "1.5G", "4KiB", "2gb" (powers of 1024), above 0 */
int parse_size(const char *s, double *bytes);
/* "prog: message" on stderr; returns -1, for option parsers to return */
int __attribute__((format(printf, 2, 3)))
opt_error(const char *prog, const char *fmt, ...);

#endif
