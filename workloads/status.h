/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Exit codes and run states shared by the workloads (swapbench,
 * swaprace): one table, so the lab reads them alike (exit 3 is a data
 * mismatch, lab/guest/verdict.py's integrity-error).
 */
#ifndef SWAPLAB_STATUS_H
#define SWAPLAB_STATUS_H

/* exit codes, see README.md */
enum {
	EXIT_OK = 0,
	EXIT_ERROR = 1,
	EXIT_USAGE = 2,
	EXIT_MISMATCH = 3,
	EXIT_ENOMEM = 4,
	EXIT_OOM = 5,
	EXIT_CRASH = 6,
};

/* task and process states, in rising order of severity */
enum sb_status {
	ST_NOTRUN,
	ST_RUNNING,
	ST_OK,
	ST_IO_KILLED,	/* SIGBUS with --survive-sigbus: not a run failure */
	ST_ERROR,
	ST_CRASH,
	ST_ENOMEM,
	ST_OOM,
	ST_MISMATCH,
};

/* the JSON name of a state */
const char *status_name(int st);
/* the process exit code for a state, and back */
int exit_of_status(int st);
int status_of_exit(int code);

#endif
