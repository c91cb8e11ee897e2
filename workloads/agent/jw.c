// SPDX-License-Identifier: GPL-2.0
/*
 * Growable buffer and streaming JSON writer.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jw.h"

static void buf_grow(struct buf *b, size_t need)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *p;

	if (b->len + need + 1 <= b->cap)
		return;
	while (cap < b->len + need + 1)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p) {
		/* PID 1 cannot do much better: say so and stop here */
		static const char msg[] = "swaplab-agent: out of memory\n";

		if (write(2, msg, sizeof(msg) - 1) < 0)
			_exit(1);
		_exit(1);
	}
	b->data = p;
	b->cap = cap;
}

void buf_put(struct buf *b, const void *p, size_t n)
{
	buf_grow(b, n);
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void buf_puts(struct buf *b, const char *s)
{
	buf_put(b, s, strlen(s));
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	buf_grow(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

static void put_escaped(struct buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	buf_grow(b, n + 2);
	buf_put(b, "\"", 1);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[7];

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			buf_put(b, esc, 2);
		} else if (c == '\n') {
			buf_put(b, "\\n", 2);
		} else if (c == '\t') {
			buf_put(b, "\\t", 2);
		} else if (c < 0x20 || c >= 0x7f) {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			buf_put(b, esc, 6);
		} else {
			buf_put(b, &s[i], 1);
		}
	}
	buf_put(b, "\"", 1);
}

static void sep(struct jw *w, const char *key)
{
	if (w->depth > 0) {
		if (!w->first[w->depth])
			buf_put(&w->b, ",", 1);
		w->first[w->depth] = false;
	}
	if (key) {
		put_escaped(&w->b, key, strlen(key));
		buf_put(&w->b, ":", 1);
	}
}

static void open_(struct jw *w, const char *key, const char *c)
{
	sep(w, key);
	buf_puts(&w->b, c);
	if (w->depth < JW_DEPTH - 1)
		w->depth++;
	w->first[w->depth] = true;
}

void jw_obj(struct jw *w, const char *key)
{
	open_(w, key, "{");
}

void jw_arr(struct jw *w, const char *key)
{
	open_(w, key, "[");
}

void jw_end_obj(struct jw *w)
{
	buf_puts(&w->b, "}");
	if (w->depth > 0)
		w->depth--;
}

void jw_end_arr(struct jw *w)
{
	buf_puts(&w->b, "]");
	if (w->depth > 0)
		w->depth--;
}

void jw_strn(struct jw *w, const char *key, const char *val, size_t n)
{
	sep(w, key);
	put_escaped(&w->b, val, n);
}

void jw_str(struct jw *w, const char *key, const char *val)
{
	if (!val) {
		jw_null(w, key);
		return;
	}
	jw_strn(w, key, val, strlen(val));
}

void jw_int(struct jw *w, const char *key, long long val)
{
	sep(w, key);
	buf_printf(&w->b, "%lld", val);
}

void jw_uint(struct jw *w, const char *key, unsigned long long val)
{
	sep(w, key);
	buf_printf(&w->b, "%llu", val);
}

void jw_dbl(struct jw *w, const char *key, double val)
{
	sep(w, key);
	if (isfinite(val))
		buf_printf(&w->b, "%.9g", val);
	else
		buf_puts(&w->b, "null");
}

void jw_bool(struct jw *w, const char *key, bool val)
{
	sep(w, key);
	buf_puts(&w->b, val ? "true" : "false");
}

void jw_null(struct jw *w, const char *key)
{
	sep(w, key);
	buf_puts(&w->b, "null");
}

void jw_raw(struct jw *w, const char *key, const char *json)
{
	sep(w, key);
	buf_puts(&w->b, json);
}
