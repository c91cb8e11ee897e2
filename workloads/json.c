// SPDX-License-Identifier: GPL-2.0
/*
 * Minimal streaming JSON writer, two-space indented.
 */
#include <inttypes.h>
#include <math.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "json.h"

void jw_init(struct jw *w, FILE *f)
{
	w->f = f;
	w->depth = 0;
	w->first[0] = true;
}

void jw_finish(struct jw *w)
{
	fputc('\n', w->f);
	fflush(w->f);
}

static void jw_indent(struct jw *w)
{
	int i;

	fputc('\n', w->f);
	for (i = 0; i < w->depth; i++)
		fputs("  ", w->f);
}

static void jw_escape(struct jw *w, const char *s)
{
	fputc('"', w->f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(w->f, "\\%c", c);
		else if (c < 0x20)
			fprintf(w->f, "\\u%04x", c);
		else
			fputc(c, w->f);
	}
	fputc('"', w->f);
}

/* comma, newline, indentation and "key": as needed */
static void jw_key(struct jw *w, const char *key)
{
	if (!w->first[w->depth])
		fputc(',', w->f);
	w->first[w->depth] = false;
	if (w->depth)
		jw_indent(w);
	if (key) {
		jw_escape(w, key);
		fputs(": ", w->f);
	}
}

static void jw_open(struct jw *w, const char *key, char c)
{
	jw_key(w, key);
	fputc(c, w->f);
	if (w->depth < JW_MAX_DEPTH - 1)
		w->depth++;
	w->first[w->depth] = true;
}

static void jw_close(struct jw *w, char c)
{
	bool empty = w->first[w->depth];

	if (w->depth)
		w->depth--;
	if (!empty)
		jw_indent(w);
	fputc(c, w->f);
}

void jw_obj_begin(struct jw *w, const char *key)
{
	jw_open(w, key, '{');
}

void jw_obj_end(struct jw *w)
{
	jw_close(w, '}');
}

void jw_arr_begin(struct jw *w, const char *key)
{
	jw_open(w, key, '[');
}

void jw_arr_end(struct jw *w)
{
	jw_close(w, ']');
}

void jw_u64(struct jw *w, const char *key, uint64_t v)
{
	jw_key(w, key);
	fprintf(w->f, "%" PRIu64, v);
}

void jw_i64(struct jw *w, const char *key, int64_t v)
{
	jw_key(w, key);
	fprintf(w->f, "%" PRId64, v);
}

void jw_dbl(struct jw *w, const char *key, double v, int prec)
{
	jw_key(w, key);
	if (isfinite(v))
		fprintf(w->f, "%.*f", prec, v);
	else
		fputs("null", w->f);
}

void jw_str(struct jw *w, const char *key, const char *s)
{
	jw_key(w, key);
	jw_escape(w, s);
}

void jw_hex(struct jw *w, const char *key, uint64_t v)
{
	jw_key(w, key);
	fprintf(w->f, "\"0x%016" PRIx64 "\"", v);
}

void jw_bool(struct jw *w, const char *key, bool v)
{
	jw_key(w, key);
	fputs(v ? "true" : "false", w->f);
}

void jw_null(struct jw *w, const char *key)
{
	jw_key(w, key);
	fputs("null", w->f);
}

void jw_system(struct jw *w, uint64_t page_size, uint64_t mem_total,
	       uint64_t swap_total)
{
	struct utsname u;

	jw_obj_begin(w, "system");
	jw_u64(w, "page_size", page_size);
	jw_u64(w, "mem_total_bytes", mem_total);
	jw_u64(w, "swap_total_bytes", swap_total);
	jw_i64(w, "cpus", sysconf(_SC_NPROCESSORS_ONLN));
	jw_str(w, "kernel", uname(&u) ? "" : u.release);
	jw_obj_end(w);
}
