/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest programs' one JSON writer, and the growable byte buffer it
 * can write into.
 *
 * A writer set up with jw_init() streams two-space indented JSON to a
 * FILE (a workload's report on stdout); a zero-initialised one builds
 * compact JSON in its buffer @b (the agent's frames, which it sends
 * whole).  Strings are escaped byte by byte: control characters and
 * every byte >= 0x7f become \u00XX, so any input (a kernel log, a
 * program's output) yields valid ASCII JSON.  Pass key == NULL for array
 * elements and for the top-level value.
 */
#ifndef SWAPLAB_JW_H
#define SWAPLAB_JW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct buf {
	char *data;
	size_t len;
	size_t cap;
};

/* on allocation failure these say so on stderr and _exit(1) */
void buf_put(struct buf *b, const void *p, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void buf_free(struct buf *b);

#define JW_DEPTH 32

struct jw {
	struct buf b;		/* the JSON, unless @f is set */
	FILE *f;		/* stream here, indented */
	int depth;
	bool first[JW_DEPTH];
};

void jw_init(struct jw *w, FILE *f);
/* the newline after the top-level value, and a flush */
void jw_finish(struct jw *w);
void jw_obj_begin(struct jw *w, const char *key);
void jw_obj_end(struct jw *w);
void jw_arr_begin(struct jw *w, const char *key);
void jw_arr_end(struct jw *w);
void jw_u64(struct jw *w, const char *key, uint64_t v);
void jw_i64(struct jw *w, const char *key, int64_t v);
/* fixed-point with @prec decimals; NaN and infinities become null */
void jw_dbl(struct jw *w, const char *key, double v, int prec);
/* 9 significant digits; NaN and infinities become null */
void jw_real(struct jw *w, const char *key, double v);
/* NULL becomes null */
void jw_str(struct jw *w, const char *key, const char *s);
void jw_strn(struct jw *w, const char *key, const char *s, size_t n);
void jw_hex(struct jw *w, const char *key, uint64_t v);
void jw_bool(struct jw *w, const char *key, bool v);
void jw_null(struct jw *w, const char *key);
/* @json, already valid JSON text, as a value */
void jw_raw(struct jw *w, const char *key, const char *json);

#endif
