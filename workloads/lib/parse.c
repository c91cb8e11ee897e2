// SPDX-License-Identifier: GPL-2.0
/*
 * Strict parsing of option values (see parse.h).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || *end || x < lo || x > hi)
		return -1;
	*v = x;
	return 0;
}

int parse_uint(const char *s, unsigned int hi, unsigned int *v)
{
	uint64_t x;

	if (parse_u64(s, 1, hi, &x))
		return -1;
	*v = (unsigned int)x;
	return 0;
}

/* a finite number, the whole of @s */
static int parse_double(const char *s, double *x)
{
	char *end;

	errno = 0;
	*x = strtod(s, &end);
	return errno || end == s || *end || !isfinite(*x) ? -1 : 0;
}

int parse_pos_double(const char *s, double hi, double *v)
{
	double x;

	if (parse_double(s, &x) || x <= 0 || x > hi)
		return -1;
	*v = x;
	return 0;
}

int parse_share(const char *s, double hi, double *v)
{
	double x;

	if (parse_double(s, &x) || x < 0 || x > hi)
		return -1;
	*v = x;
	return 0;
}

/* "4096", "64M", "1.5G", "4KiB", "2gb" (powers of 1024) */
int parse_size(const char *s, double *bytes)
{
	static const char units[] = "KMGTP";
	char *end;
	double x;

	errno = 0;
	x = strtod(s, &end);
	if (errno || end == s || !isfinite(x) || x <= 0)
		return -1;
	if (*end) {
		const char *u = strchr(units, toupper((unsigned char)*end));

		if (!u)
			return -1;
		x *= pow(1024, (double)(u - units + 1));
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
		if (*end)
			return -1;
	}
	*bytes = x;
	return 0;
}

int opt_error(const char *prog, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return -1;
}
