// SPDX-License-Identifier: GPL-2.0
/*
 * Cell configuration parser.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "jw.h"
#include "util.h"

static void defaults(struct conf *c)
{
	memset(c, 0, sizeof(*c));
	c->cell = "";
	c->mode = "run";
	c->device_wait_s = 10;
	c->timeout_s = 0;
	c->trace_func = "do_swap_page";
	c->trace_buffer_kb = 4096;
	c->result_port = "org.swaplab.result";
	c->test = "";
}

static bool truthy(const char *v)
{
	return !strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true");
}

static void add_kv(struct kv *list, int *n, char *key, char *val)
{
	if (*n >= CONF_MAX_LIST)
		return;
	list[*n].key = key;
	list[*n].val = val;
	(*n)++;
}

static void set(struct conf *c, char *key, char *val)
{
	if (!strncmp(key, "sysfs.", 6))
		add_kv(c->sysfs, &c->nsysfs, key + 6, val);
	else if (!strncmp(key, "sysctl.", 7))
		add_kv(c->sysctl, &c->nsysctl, key + 7, val);
	else if (!strcmp(key, "arg")) {
		if (c->argc < CONF_MAX_LIST)
			c->argv[c->argc++] = val;
	} else if (!strcmp(key, "env")) {
		if (c->nenv < CONF_MAX_LIST)
			c->env[c->nenv++] = val;
	} else if (!strcmp(key, "cell"))
		c->cell = val;
	else if (!strcmp(key, "mode"))
		c->mode = val;
	else if (!strcmp(key, "device"))
		c->device = val;
	else if (!strcmp(key, "swap_kib"))
		c->swap_kib = strtoull(val, NULL, 10);
	else if (!strcmp(key, "swap_file"))
		c->swap_file = val;
	else if (!strcmp(key, "pmem_fsdax"))
		c->pmem_fsdax = truthy(val);
	else if (!strcmp(key, "zram_comp"))
		c->zram_comp = val;
	else if (!strcmp(key, "device_wait_s"))
		c->device_wait_s = atoi(val);
	else if (!strcmp(key, "timeout_s"))
		c->timeout_s = atoi(val);
	else if (!strcmp(key, "interactive"))
		c->interactive = truthy(val);
	else if (!strcmp(key, "trace"))
		c->trace = truthy(val);
	else if (!strcmp(key, "trace_func"))
		c->trace_func = val;
	else if (!strcmp(key, "trace_buffer_kb"))
		c->trace_buffer_kb = atoi(val);
	else if (!strcmp(key, "result_port"))
		c->result_port = val;
	else if (!strcmp(key, "test"))
		c->test = val;
	else if (c->nunknown < CONF_MAX_LIST)
		c->unknown[c->nunknown++] = key;
}

int conf_load(struct conf *c, const char *path)
{
	struct buf b = { 0 };
	char *line, *next;
	int err;

	defaults(c);
	err = read_file(path, &b);
	if (err)
		return err;
	/* the buffer is kept: keys and values point into it */
	for (line = b.data; line && *line; line = next) {
		char *eq, *end;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		end = line + strlen(line);
		if (end > line && end[-1] == '\r')
			*--end = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			if (c->nunknown < CONF_MAX_LIST)
				c->unknown[c->nunknown++] = line;
			continue;
		}
		*eq = '\0';
		set(c, line, eq + 1);
	}
	c->argv[c->argc] = NULL;
	c->env[c->nenv] = NULL;
	return 0;
}
