// SPDX-License-Identifier: GPL-2.0
/*
 * Run states and exit codes (see status.h).
 */
#include "status.h"

static const char *const status_names[] = {
	[ST_NOTRUN] = "notrun",
	[ST_RUNNING] = "running",
	[ST_OK] = "ok",
	[ST_IO_KILLED] = "io-killed",
	[ST_ERROR] = "error",
	[ST_CRASH] = "crash",
	[ST_ENOMEM] = "enomem",
	[ST_OOM] = "oom",
	[ST_MISMATCH] = "mismatch",
};

const char *status_name(int st)
{
	if (st < 0 || st > ST_MISMATCH)
		return "error";
	return status_names[st];
}

int status_of_exit(int code)
{
	switch (code) {
	case EXIT_OK:
		return ST_OK;
	case EXIT_MISMATCH:
		return ST_MISMATCH;
	case EXIT_ENOMEM:
		return ST_ENOMEM;
	case EXIT_OOM:
		return ST_OOM;
	case EXIT_CRASH:
		return ST_CRASH;
	default:
		return ST_ERROR;
	}
}

int exit_of_status(int st)
{
	switch (st) {
	case ST_OK:
	case ST_IO_KILLED:	/* not a failure of the run */
		return EXIT_OK;
	case ST_MISMATCH:
		return EXIT_MISMATCH;
	case ST_ENOMEM:
		return EXIT_ENOMEM;
	case ST_OOM:
		return EXIT_OOM;
	case ST_CRASH:
		return EXIT_CRASH;
	default:
		return EXIT_ERROR;
	}
}
