// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/meminfo and /proc/self/smaps parsing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "procfs.h"

/* the /proc/meminfo values in kB of the @n @keys; 0, -errno or -EINVAL */
static int meminfo_kb(const char *const *keys, unsigned long long *kb,
		      int n)
{
	char line[256];
	int i, found = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		for (i = 0; i < n; i++) {
			size_t len = strlen(keys[i]);

			if (!strncmp(line, keys[i], len) && line[len] == ':' &&
			    sscanf(line + len + 1, "%llu", &kb[i]) == 1)
				found |= 1 << i;
		}
	}
	fclose(f);
	return found == (1 << n) - 1 ? 0 : -EINVAL;
}

int meminfo_read(uint64_t *mem_total, uint64_t *swap_total)
{
	static const char *const keys[] = { "MemTotal", "SwapTotal" };
	unsigned long long kb[2] = { 0, 0 };
	int ret = meminfo_kb(keys, kb, 2);

	*mem_total = kb[0] * 1024;
	*swap_total = kb[1] * 1024;
	return ret;
}

int meminfo_swap_used_kb(int64_t *kb)
{
	static const char *const keys[] = { "SwapTotal", "SwapFree" };
	unsigned long long v[2];
	int ret = meminfo_kb(keys, v, 2);

	if (!ret)
		*kb = (int64_t)v[0] - (int64_t)v[1];
	return ret;
}

int smaps_area(uint64_t start, uint64_t end, struct area_info *ai)
{
	char line[512];
	unsigned long long lo, hi, kb;
	int inside = 0, any = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	ai->rss_kb = -1;
	ai->swap_kb = -1;
	ai->anon_huge_kb = -1;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		/* entry headers start "lo-hi perms ...", all lower case */
		if ((line[0] >= '0' && line[0] <= '9') ||
		    (line[0] >= 'a' && line[0] <= 'f')) {
			if (sscanf(line, "%llx-%llx ", &lo, &hi) != 2)
				continue;
			inside = lo >= start && hi <= end && lo < hi;
			if (inside && !any) {
				any = 1;
				ai->rss_kb = 0;
				ai->swap_kb = 0;
				ai->anon_huge_kb = 0;
			}
			continue;
		}
		if (!inside)
			continue;
		if (sscanf(line, "Rss: %llu kB", &kb) == 1)
			ai->rss_kb += (int64_t)kb;
		else if (sscanf(line, "Swap: %llu kB", &kb) == 1)
			ai->swap_kb += (int64_t)kb;
		else if (sscanf(line, "AnonHugePages: %llu kB", &kb) == 1)
			ai->anon_huge_kb += (int64_t)kb;
	}
	fclose(f);
	return any ? 0 : -ENOENT;
}
