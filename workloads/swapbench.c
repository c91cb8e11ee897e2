// SPDX-License-Identifier: GPL-2.0
/*
 * swapbench: a vm-scalability style swap workload for the swaplab guests.
 *
 * The parent parses the options, maps the result area shared with the
 * children, forks the processes of every group and waits for them; each
 * child runs its threads (tasks, see run.c).  A child killed by SIGKILL is
 * taken for an OOM kill; one killed by SIGBUS (a swap-in read error) is
 * io-killed with --survive-sigbus, and the others go on without it.  See
 * README.md for the options, the JSON schema and the exit codes.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "swapbench.h"
#include "swapout.h"
#include "work.h"

#define OOM_ADJ "/proc/self/oom_score_adj"

static char oom_adj_orig[16];

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* keep the OOM killer on the workers, away from the parent (best effort) */
static void protect_parent(void)
{
	int fd = open(OOM_ADJ, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return;
	n = read(fd, oom_adj_orig, sizeof(oom_adj_orig) - 1);
	close(fd);
	if (n <= 0 || write_str(OOM_ADJ, "-1000"))
		oom_adj_orig[0] = '\0';
	else
		oom_adj_orig[n] = '\0';
}

static struct sb_shared *shared_alloc(const struct sb_config *cfg,
				      size_t *len)
{
	struct sb_shared *sh;
	unsigned int g, i;

	size_t tasks_len = sizeof(*sh) + cfg->ntasks * sizeof(struct sb_task);

	*len = tasks_len + cfg->nprocs * sizeof(struct sb_pstate);
	sh = mmap(NULL, *len, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return NULL;
	mlock(sh, *len);	/* best effort: keep results out of swap */
	sh->proc = (struct sb_pstate *)((char *)sh + tasks_len);
	for (g = 0; g < cfg->ngroups; g++) {
		const struct sb_group *gr = &cfg->grp[g];

		for (i = 0; i < gr->procs; i++)
			sh->proc[gr->first_proc + i].threads = gr->threads;

		for (i = 0; i < gr->procs * gr->threads; i++) {
			struct sb_task *t = &sh->task[gr->first_task + i];

			t->group = g;
			t->proc = i / gr->threads;
			t->thread = i % gr->threads;
			t->anon_huge_kb_first = -1;
			t->anon_huge_kb_end = -1;
			t->rss_kb_end = -1;
			t->swap_kb_end = -1;
			hist_init(&t->hist);
		}
	}
	return sh;
}

/*
 * A process ended or could not start: settle its unfinished tasks (a
 * mismatch found before it died still wins) and its verifier.
 */
static void settle_tasks(const struct sb_config *cfg, struct sb_shared *sh,
			 const struct sb_proc *p)
{
	const struct sb_group *g = &cfg->grp[p->group];
	unsigned int j, first = g->first_task + p->index * g->threads;
	struct sb_pstate *ps = &sh->proc[g->first_proc + p->index];

	for (j = 0; j < g->threads; j++) {
		struct sb_task *t = &sh->task[first + j];

		if (t->status == ST_NOTRUN || t->status == ST_RUNNING)
			t->status = p->status == ST_OK ? ST_ERROR : p->status;
		if (t->mismatches || t->fork_mismatches)
			t->status = ST_MISMATCH;
	}
	/* not reaped: it went down with the process (PR_SET_PDEATHSIG) */
	if (ps->fork_status == ST_RUNNING)
		ps->fork_status = p->status == ST_OK ? ST_ERROR : p->status;
}

static void child_died(struct sb_shared *sh)
{
	/* release the barriers and the background group */
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&sh->abort, 1, __ATOMIC_RELEASE);
}

/*
 * --survive-sigbus: the others go on without @p.  Its tasks count as
 * arrived at the barriers and, in the foreground, as done.
 */
static void child_gone(const struct sb_config *cfg, struct sb_shared *sh,
		       const struct sb_proc *p)
{
	struct sb_pstate *ps = &sh->proc[cfg->grp[p->group].first_proc +
					 p->index];

	__atomic_store_n(&ps->gone, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&sh->ngone, 1, __ATOMIC_SEQ_CST);
	fg_check_stop(cfg, sh);
}

/*
 * A process killed by SIGBUS would dump its core first: of all its
 * areas, in the guest's RAM-backed root, before the parent hears of it.
 */
static void no_core_dump(void)
{
	struct rlimit no_core = { 0, 0 };

	setrlimit(RLIMIT_CORE, &no_core);
}

static void start_children(const struct sb_config *cfg, struct sb_shared *sh,
			   struct sb_proc *procs, unsigned int *live)
{
	unsigned int g, i;

	fflush(stdout);
	fflush(stderr);
	for (g = 0; g < cfg->ngroups; g++) {
		const struct sb_group *gr = &cfg->grp[g];

		for (i = 0; i < gr->procs; i++) {
			struct sb_proc *p = &procs[gr->first_proc + i];
			pid_t pid;

			p->group = g;
			p->index = i;
			p->exit_code = -1;
			pid = fork();
			if (pid == 0) {
				if (oom_adj_orig[0])
					write_str(OOM_ADJ, oom_adj_orig);
				if (cfg->survive_sigbus)
					no_core_dump();
				_exit(child_main(cfg, sh, g, i));
			}
			if (pid < 0) {
				fprintf(stderr, "swapbench: fork: %s\n",
					strerror(errno));
				p->status = ST_ERROR;
				settle_tasks(cfg, sh, p);
				child_died(sh);
				continue;
			}
			p->pid = pid;
			p->status = ST_RUNNING;
			(*live)++;
		}
	}
}

static void wait_children(const struct sb_config *cfg, struct sb_shared *sh,
			  struct sb_proc *procs, unsigned int live)
{
	struct rusage ru;
	unsigned int i;
	int wst;

	while (live) {
		struct sb_proc *p = NULL;
		pid_t pid = wait4(-1, &wst, 0, &ru);

		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (i = 0; i < cfg->nprocs; i++)
			if (procs[i].pid == pid)
				p = &procs[i];
		if (!p)
			continue;
		live--;
		p->minflt = (uint64_t)ru.ru_minflt;
		p->majflt = (uint64_t)ru.ru_majflt;
		if (WIFSIGNALED(wst)) {
			bool io = WTERMSIG(wst) == SIGBUS &&
				  cfg->survive_sigbus;

			p->signal = WTERMSIG(wst);
			p->status = io ? ST_IO_KILLED :
				    p->signal == SIGKILL ? ST_OOM : ST_CRASH;
			fprintf(stderr, "swapbench: process %d (%s %u) killed "
				"by signal %d%s\n", pid,
				cfg->grp[p->group].name, p->index, p->signal,
				io ? " (swap read error?), the others go on" :
				p->signal == SIGKILL ? " (OOM kill?)" : "");
			if (io)
				child_gone(cfg, sh, p);
			else
				child_died(sh);
		} else {
			p->exit_code = WEXITSTATUS(wst);
			p->status = status_of_exit(p->exit_code);
		}
		settle_tasks(cfg, sh, p);
	}
}

static int run(const struct sb_config *cfg)
{
	struct swapout_trace *so = NULL;
	struct sb_result res;
	struct sb_shared *sh;
	struct rusage ru;
	unsigned int i, live = 0;
	size_t len;

	sh = shared_alloc(cfg, &len);
	res.procs = calloc(cfg->nprocs, sizeof(*res.procs));
	if (!sh || !res.procs) {
		fprintf(stderr, "swapbench: no memory for the results\n");
		free(res.procs);
		if (sh)
			munmap(sh, len);
		return EXIT_ERROR;
	}
	protect_parent();
	start_children(cfg, sh, res.procs, &live);
	res.swapout = NULL;
	if (cfg->mode == MODE_FILL) {
		so = calloc(1, sizeof(*so));
		if (so)
			swapout_start(so, cfg, sh);
		else
			fprintf(stderr, "swapbench: no memory for the "
				"swap-out trace\n");
	}
	wait_children(cfg, sh, res.procs, live);
	if (so) {
		swapout_stop(so);
		res.swapout = so;
	}

	getrusage(RUSAGE_CHILDREN, &ru);
	res.minflt = (uint64_t)ru.ru_minflt;
	res.majflt = (uint64_t)ru.ru_majflt;
	res.status = ST_OK;
	for (i = 0; i < cfg->nprocs; i++)
		if (res.procs[i].status > res.status)
			res.status = res.procs[i].status;
	for (i = 0; i < cfg->ntasks; i++) {
		int st = sh->task[i].status;

		if (st < ST_OK)
			st = ST_ERROR;
		if (st > res.status)
			res.status = st;
	}
	/* io-kills alone (--survive-sigbus) do not fail the run */
	if (res.status == ST_IO_KILLED)
		res.status = ST_OK;
	res.exit_code = exit_of_status(res.status);
	report_json(cfg, sh, &res);
	if (!cfg->quiet)
		report_human(cfg, sh, &res);
	free(res.procs);
	free(so);
	munmap(sh, len);
	return res.exit_code;
}

int main(int argc, char **argv)
{
	struct sb_config cfg;
	int action, ret;

	ret = options_parse(&cfg, argc, argv, &action);
	if (ret)
		return ret;
	switch (action) {
	case ACT_HELP:
		usage(stdout);
		return EXIT_OK;
	case ACT_SELFTEST_HIST:
		return hist_selftest();
	case ACT_DUMP_ORDER:
		dump_order(&cfg);
		return EXIT_OK;
	case ACT_CALIBRATE:
		return calibrate(cfg.calib_file, cfg.work_ns);
	default:
		return run(&cfg);
	}
}
