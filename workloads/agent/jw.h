/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A growable byte buffer and a small streaming JSON writer on top of it.
 * Strings are escaped byte by byte: control characters and every byte
 * >= 0x80 become \u00XX, so any input (kernel log, workload output)
 * yields valid ASCII JSON.
 */
#ifndef AGENT_JW_H
#define AGENT_JW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf {
	char *data;
	size_t len;
	size_t cap;
};

void buf_put(struct buf *b, const void *p, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void buf_free(struct buf *b);

#define JW_DEPTH 32

struct jw {
	struct buf b;
	int depth;
	bool first[JW_DEPTH];
};

/* @key is NULL inside arrays and for the top-level value */
void jw_obj(struct jw *w, const char *key);
void jw_arr(struct jw *w, const char *key);
void jw_end_obj(struct jw *w);
void jw_end_arr(struct jw *w);
void jw_str(struct jw *w, const char *key, const char *val);
void jw_strn(struct jw *w, const char *key, const char *val, size_t n);
void jw_int(struct jw *w, const char *key, long long val);
void jw_uint(struct jw *w, const char *key, unsigned long long val);
void jw_dbl(struct jw *w, const char *key, double val);
void jw_bool(struct jw *w, const char *key, bool val);
void jw_null(struct jw *w, const char *key);



/* insert @json (already valid JSON text) as a value */
void jw_raw(struct jw *w, const char *key, const char *json);
#endif
