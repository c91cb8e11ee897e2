// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/meminfo and /proc/self/smaps parsing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "procfs.h"

int meminfo_read(uint64_t *mem_total, uint64_t *swap_total)
{
	char line[256];
	unsigned long long kb;
	int found = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -errno;
	*mem_total = 0;
	*swap_total = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
			*mem_total = kb * 1024;
			found |= 1;
		} else if (sscanf(line, "SwapTotal: %llu kB", &kb) == 1) {
			*swap_total = kb * 1024;
			found |= 2;
		}
	}
	fclose(f);
	return found == 3 ? 0 : -EINVAL;
}

int meminfo_swap_used_kb(int64_t *kb)
{
	char line[256];
	unsigned long long total = 0, free = 0, v;
	int found = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "SwapTotal: %llu kB", &v) == 1) {
			total = v;
			found |= 1;
		} else if (sscanf(line, "SwapFree: %llu kB", &v) == 1) {
			free = v;
			found |= 2;
		}
	}
	fclose(f);
	if (found != 3)
		return -EINVAL;
	*kb = (int64_t)total - (int64_t)free;
	return 0;
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
