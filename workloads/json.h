/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal streaming JSON writer.  Pass key == NULL for array elements and
 * for the top-level value.
 */
#ifndef SWAPBENCH_JSON_H
#define SWAPBENCH_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JW_MAX_DEPTH 16

struct jw {
	FILE *f;
	int depth;
	bool first[JW_MAX_DEPTH];
};

void jw_init(struct jw *w, FILE *f);
void jw_finish(struct jw *w);
void jw_obj_begin(struct jw *w, const char *key);
void jw_obj_end(struct jw *w);
void jw_arr_begin(struct jw *w, const char *key);
void jw_arr_end(struct jw *w);
void jw_u64(struct jw *w, const char *key, uint64_t v);
void jw_i64(struct jw *w, const char *key, int64_t v);
/* fixed-point with @prec decimals; NaN and infinities become null */
void jw_dbl(struct jw *w, const char *key, double v, int prec);
void jw_str(struct jw *w, const char *key, const char *s);
void jw_hex(struct jw *w, const char *key, uint64_t v);
void jw_bool(struct jw *w, const char *key, bool v);
void jw_null(struct jw *w, const char *key);
/* "system": page size, memory and swap totals, CPUs, kernel release */
void jw_system(struct jw *w, uint64_t page_size, uint64_t mem_total,
	       uint64_t swap_total);

#endif
