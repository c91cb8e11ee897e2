// SPDX-License-Identifier: GPL-2.0
/*
 * The guest programs' JSON writer and byte buffer (see jw.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
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
		/* the agent is PID 1: it cannot do much better either */
		static const char msg[] = "swaplab: out of memory\n";

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

static void put(struct jw *w, const char *s, size_t n)
{
	if (w->f)
		fwrite(s, 1, n, w->f);
	else
		buf_put(&w->b, s, n);
}

static void puts_(struct jw *w, const char *s)
{
	put(w, s, strlen(s));
}

static void __attribute__((format(printf, 2, 3)))
printf_(struct jw *w, const char *fmt, ...)
{
	char text[64];
	va_list ap;
	int n;

	/* numbers only: they fit */
	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof(text))
		put(w, text, (size_t)n);
}

static void put_escaped(struct jw *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, plain = 0;

	put(w, "\"", 1);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[6] = { '\\', (char)c };
		size_t len = 2;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			continue;
		put(w, s + plain, i - plain);
		plain = i + 1;
		if (c == '\n') {
			esc[1] = 'n';
		} else if (c == '\t') {
			esc[1] = 't';
		} else if (c < 0x20 || c >= 0x7f) {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			len = 6;
		}
		put(w, esc, len);
	}
	put(w, s + plain, n - plain);
	put(w, "\"", 1);
}

static void indent(struct jw *w)
{
	int i;

	put(w, "\n", 1);
	for (i = 0; i < w->depth; i++)
		put(w, "  ", 2);
}

/* comma, (indentation) and "key": as needed */
static void key_(struct jw *w, const char *key)
{
	if (w->depth > 0) {
		if (!w->first[w->depth])
			put(w, ",", 1);
		w->first[w->depth] = false;
		if (w->f)
			indent(w);
	}
	if (key) {
		put_escaped(w, key, strlen(key));
		puts_(w, w->f ? ": " : ":");
	}
}

static void open_(struct jw *w, const char *key, char c)
{
	key_(w, key);
	put(w, &c, 1);
	if (w->depth < JW_DEPTH - 1)
		w->depth++;
	w->first[w->depth] = true;
}

static void close_(struct jw *w, char c)
{
	bool empty = w->first[w->depth];

	if (w->depth > 0)
		w->depth--;
	if (w->f && !empty)
		indent(w);
	put(w, &c, 1);
}

void jw_init(struct jw *w, FILE *f)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
}

void jw_finish(struct jw *w)
{
	if (!w->f)
		return;
	fputc('\n', w->f);
	fflush(w->f);
}

void jw_obj_begin(struct jw *w, const char *key)
{
	open_(w, key, '{');
}

void jw_obj_end(struct jw *w)
{
	close_(w, '}');
}

void jw_arr_begin(struct jw *w, const char *key)
{
	open_(w, key, '[');
}

void jw_arr_end(struct jw *w)
{
	close_(w, ']');
}

void jw_u64(struct jw *w, const char *key, uint64_t v)
{
	key_(w, key);
	printf_(w, "%" PRIu64, v);
}

void jw_i64(struct jw *w, const char *key, int64_t v)
{
	key_(w, key);
	printf_(w, "%" PRId64, v);
}

void jw_dbl(struct jw *w, const char *key, double v, int prec)
{
	char text[352];	/* DBL_MAX in %f, and up to 40 decimals */
	int n;

	key_(w, key);
	if (!isfinite(v)) {
		puts_(w, "null");
		return;
	}
	n = snprintf(text, sizeof(text), "%.*f", prec > 40 ? 40 : prec, v);
	if (n > 0 && (size_t)n < sizeof(text))
		put(w, text, (size_t)n);
	else
		puts_(w, "null");
}

void jw_real(struct jw *w, const char *key, double v)
{
	key_(w, key);
	if (isfinite(v))
		printf_(w, "%.9g", v);
	else
		puts_(w, "null");
}

void jw_strn(struct jw *w, const char *key, const char *s, size_t n)
{
	key_(w, key);
	put_escaped(w, s, n);
}

void jw_str(struct jw *w, const char *key, const char *s)
{
	if (!s) {
		jw_null(w, key);
		return;
	}
	jw_strn(w, key, s, strlen(s));
}

void jw_hex(struct jw *w, const char *key, uint64_t v)
{
	key_(w, key);
	printf_(w, "\"0x%016" PRIx64 "\"", v);
}

void jw_bool(struct jw *w, const char *key, bool v)
{
	key_(w, key);
	puts_(w, v ? "true" : "false");
}

void jw_null(struct jw *w, const char *key)
{
	key_(w, key);
	puts_(w, "null");
}

void jw_raw(struct jw *w, const char *key, const char *json)
{
	key_(w, key);
	puts_(w, json);
}
