// SPDX-License-Identifier: GPL-2.0
/*
 * The "system" object of a workload's report (see sysinfo.h).
 */
#include <sys/utsname.h>
#include <unistd.h>

#include "sysinfo.h"

void sysinfo_emit(struct jw *w, uint64_t page_size, uint64_t mem_total,
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
