/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The "system" object of a workload's report (swapbench, swaprace).
 */
#ifndef SWAPLAB_SYSINFO_H
#define SWAPLAB_SYSINFO_H

#include <stdint.h>

#include "jw.h"

/* "system": page size, memory and swap totals, CPUs, kernel release */
void sysinfo_emit(struct jw *w, uint64_t page_size, uint64_t mem_total,
		  uint64_t swap_total);

#endif
