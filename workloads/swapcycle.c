// SPDX-License-Identifier: GPL-2.0
/*
 * swapcycle: run a command while the swap area is turned off and on again
 * and again underneath it (swapoff under load, for the faults matrix).
 *
 *   swapcycle [--interval-ms N] [--device DEV] [--max-cycles N] \
 *             [--push-frac-mem F] -- COMMAND [ARG...]
 *
 * The device is the first area of /proc/swaps unless --device names one
 * (which must be active).  swapcycle forks the cycler and then execs
 * COMMAND itself, so the command keeps the pid, stdout and exit status
 * the guest agent waits for.  The cycler dies with the command
 * (PR_SET_PDEATHSIG SIGTERM) and, until then, loops: sleep the interval,
 * with --push-frac-mem write F x MemTotal of its own memory and free it
 * again (so that the command's pages are out on swap and RAM is free to
 * take them back: swapoff needs both to have work and to succeed),
 * swapoff(DEV) (timed), swapon(DEV, 0) again if swapoff succeeded, one
 * line to /dev/kmsg per cycle:
 *
 *   swapcycle: cycle=N swapoff=ok|ENOMEM|EINTR|<errno name> off_ms=X
 *              swapon=ok|<errno name>|skipped push_ms=Y
 *
 * (one line; X and Y in milliseconds with three decimals).  It must never leave
 * swap off: SIGTERM, SIGINT and SIGHUP are blocked except during the sleep
 * (where they end the cycler quietly) and during swapoff (which they
 * interrupt: the kernel returns EINTR and keeps the area on).  After a
 * successful swapoff they stay blocked until swapon has returned, and a
 * failed swapon is retried for a while (SWAPON_TRIES).  SIGKILL cannot
 * be blocked: in swapoff it leaves the area on like EINTR, between a
 * successful swapoff and swapon it leaves swap off; the kernel's OOM
 * killer picks a process in swapoff first (oom_origin).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/swap.h>
#include <time.h>
#include <unistd.h>

#include "parse.h"
#include "procfs.h"
#include "push.h"

/* overridable at build time, for a test build with stubbed syscalls */
#ifndef PROC_SWAPS
#define PROC_SWAPS	"/proc/swaps"
#endif
#ifndef KMSG
#define KMSG		"/dev/kmsg"
#endif
#define SWAPON_TRIES	50	/* swapon attempts after a swapoff, */
#define SWAPON_RETRY_MS	100	/* this far apart */
#define DEF_INTERVAL_MS	1000

enum {
	EXIT_OK = 0,
	EXIT_ERROR = 1,		/* no swap area, fork failed */
	EXIT_USAGE = 2,
	EXIT_NOEXEC = 126,	/* COMMAND found but not run */
	EXIT_NOTFOUND = 127,	/* COMMAND not found */
};

struct opts {
	uint64_t interval_ms;
	uint64_t max_cycles;	/* 0: until COMMAND ends */
	double push_frac;	/* of MemTotal, written before swapoff */
	const char *device;	/* NULL: the first area of /proc/swaps */
	char **argv;		/* COMMAND [ARG...] */
};

static volatile sig_atomic_t stop_sig;

static void usage(FILE *f)
{
	fputs(
"usage: swapcycle [options] -- COMMAND [ARG...]\n"
"Run COMMAND (exec'd: it keeps swapcycle's pid, stdout and exit status)\n"
"while a child turns the swap area off and on again, over and over.\n"
"\n"
"      --interval-ms N   sleep N ms before each swapoff [1000]\n"
"      --device DEV      the swap area, must be active [the first area\n"
"                        in /proc/swaps]\n"
"      --max-cycles N    stop after N cycles [0: until COMMAND ends]\n"
"      --push-frac-mem F before each swapoff write F x MemTotal of fresh\n"
"                        memory and free it: COMMAND's pages go out to\n"
"                        swap, and RAM is free for swapoff [0]\n"
"  -h, --help            this text\n"
"\n"
"Each cycle writes one line to /dev/kmsg:\n"
"  swapcycle: cycle=N swapoff=ok|ENOMEM|EINTR|<errno> off_ms=X "
"swapon=ok|<errno>|skipped push_ms=Y\n"
"\n"
"exit: COMMAND's; 1 no active swap area or fork failed, 2 usage,\n"
"126 COMMAND could not be run, 127 COMMAND not found\n", f);
}

static int __attribute__((format(printf, 1, 2))) bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("swapcycle: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs("\n\n", stderr);
	va_end(ap);
	usage(stderr);
	return EXIT_USAGE;
}

/* 0, -1 after --help, or the exit code of a usage error */
static int parse_args(struct opts *o, int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "device", required_argument, NULL, 'd' },
		{ "max-cycles", required_argument, NULL, 'c' },
		{ "push-frac-mem", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->interval_ms = DEF_INTERVAL_MS;
	opterr = 0;
	/* "+": the options end at COMMAND, whose own options are its own */
	while ((c = getopt_long(argc, argv, "+:h", long_opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (parse_u64(optarg, 1, 86400000, &o->interval_ms))
				return bad("bad --interval-ms '%s' (1 to "
					   "86400000)", optarg);
			break;
		case 'd':
			if (!*optarg)
				return bad("%s", "empty --device");
			o->device = optarg;
			break;
		case 'c':
			if (parse_u64(optarg, 0, UINT64_MAX, &o->max_cycles))
				return bad("bad --max-cycles '%s'", optarg);
			break;
		case 'p':
			if (parse_share(optarg, 4, &o->push_frac))
				return bad("bad --push-frac-mem '%s' (0 to 4)",
					   optarg);
			break;
		case 'h':
			usage(stdout);
			return -1;
		case ':':
			return bad("option '%s' needs an argument",
				   argv[optind - 1]);
		default:
			return bad("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return bad("%s", "no COMMAND to run");
	o->argv = &argv[optind];
	return 0;
}

/* undo the octal escapes of /proc/swaps (" " is "\040" there) */
static void unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/*
 * The first active area (@want NULL), or whether @want is active: 0 and
 * the area in @out, -ENOENT if none matches, or another -errno.
 */
static int find_swap(const char *want, char *out, size_t len)
{
	char line[PATH_MAX + 128], real[PATH_MAX];
	FILE *f = fopen(PROC_SWAPS, "re");
	int ret = -ENOENT;
	bool header = true;

	if (!f)
		return -errno;
	if (want && !realpath(want, real)) {
		ret = -errno;
		fclose(f);
		return ret;
	}
	while (fgets(line, sizeof(line), f)) {
		char *name = strtok(line, " \t\n");

		if (header) {		/* "Filename Type Size Used Priority" */
			header = false;
			continue;
		}
		if (!name)
			continue;
		unescape(name);
		if (want && strcmp(name, real))
			continue;
		if (strlen(name) >= len) {
			ret = -ENAMETOOLONG;
			break;
		}
		strcpy(out, name);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static const char *errno_name(int err, char *buf, size_t len)
{
	const char *s = strerrorname_np(err);

	if (s)
		return s;
	snprintf(buf, len, "E%d", err);
	return buf;
}

/* one line to the kernel log; stderr if that cannot be opened */
static void __attribute__((format(printf, 1, 2))) klog(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n, fd;

	/*
	 * A fresh open each time: the kernel rate-limits each open file of
	 * /dev/kmsg (printk.devkmsg=ratelimit, 10 lines per 5 s).
	 */
	n = snprintf(line, sizeof(line), "<5>");
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	fd = open(KMSG, O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, line, (size_t)n) == n) {
		close(fd);
		return;
	}
	if (fd >= 0)
		close(fd);
	if (write(2, line + 3, (size_t)n - 3) < 0)
		return;		/* nowhere left to tell */
}

static void on_stop(int sig)
{
	stop_sig = sig;
}

/*
 * Sleep @ms with the stop signals blocked but waited for: true if one
 * came (the cycler ends), false after the full interval.
 */
static bool sleep_or_stop(const sigset_t *stop, uint64_t ms)
{
	uint64_t end = now_ns() + ms * 1000000ULL;

	for (;;) {
		uint64_t now = now_ns();
		struct timespec ts;

		if (now >= end)
			return false;
		ts.tv_sec = (time_t)((end - now) / 1000000000ULL);
		ts.tv_nsec = (long)((end - now) % 1000000000ULL);
		if (sigtimedwait(stop, NULL, &ts) > 0)
			return true;
		if (errno != EAGAIN && errno != EINTR)
			return false;
	}
}

/* true if one of the (blocked) signals of the sigset_t @set is waiting */
static bool stop_pending(const void *set)
{
	const sigset_t *stop = set;
	sigset_t pending;
	int sig;

	if (sigpending(&pending))
		return false;
	for (sig = 1; sig < NSIG; sig++)
		if (sigismember(stop, sig) == 1 &&
		    sigismember(&pending, sig) == 1)
			return true;
	return false;
}

/* swapon again until it works, within reason; 0 or the last errno */
static int swapon_again(const char *dev, uint64_t cycle)
{
	struct timespec pause = { 0, SWAPON_RETRY_MS * 1000000L };
	char buf[16];
	int i, err = 0;

	for (i = 1; i <= SWAPON_TRIES; i++) {
		if (!swapon(dev, 0))
			return 0;
		err = errno;
		if (i == SWAPON_TRIES)
			break;
		klog("swapcycle: cycle=%" PRIu64 " swapon_try=%d error=%s, "
		     "retrying", cycle, i, errno_name(err, buf, sizeof(buf)));
		nanosleep(&pause, NULL);
	}
	return err;
}

static void __attribute__((noreturn))
cycler(const struct opts *o, const char *dev, pid_t parent)
{
	struct sigaction sa;
	sigset_t stop;
	uint64_t cycle, push_bytes, mem, swap_total;
	int fd;

	/*
	 * The stop signals: blocked, but handled when let in (no default
	 * action, which would end the cycler with swap off).
	 */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) || getppid() != parent)
		_exit(EXIT_OK);
	/* COMMAND's stdout is its own: the agent reads it to the end */
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		close(fd);
	}

	if (meminfo_read(&mem, &swap_total))
		mem = 0;	/* no push then: logged as push_bytes=0 */
	push_bytes = (uint64_t)(o->push_frac * (double)mem);
	klog("swapcycle: start dev=%s interval_ms=%" PRIu64 " max_cycles=%"
	     PRIu64 " push_bytes=%" PRIu64 " pid=%d", dev, o->interval_ms,
	     o->max_cycles, push_bytes, getpid());
	for (cycle = 1; !o->max_cycles || cycle <= o->max_cycles; cycle++) {
		char b1[16], b2[16];
		uint64_t tp, t0, t1;
		int ret, off_err = 0, on_err = 0;

		if (sleep_or_stop(&stop, o->interval_ms))
			_exit(EXIT_OK);
		tp = now_ns();
		/*
		 * The command's pages go out to swap under the push, and RAM
		 * has room to take them back once it is freed.  It takes
		 * seconds: a stop signal ends it early (EINTR), so that the
		 * cycler makes no pressure after the command has ended.
		 */
		ret = push_memory(push_bytes, stop_pending, &stop);
		if (ret == EINTR)
			_exit(EXIT_OK);
		if (ret)
			klog("swapcycle: cycle=%" PRIu64 " push: %s", cycle,
			     errno_name(ret, b1, sizeof(b1)));
		/*
		 * Let the stop signals interrupt swapoff (the kernel keeps
		 * the area on); one that came just now ends the cycler.
		 */
		sigprocmask(SIG_UNBLOCK, &stop, NULL);
		if (stop_sig)
			_exit(EXIT_OK);
		t0 = now_ns();
		ret = swapoff(dev);
		if (ret)
			off_err = errno;
		t1 = now_ns();
		sigprocmask(SIG_BLOCK, &stop, NULL);
		/* swap is off: nothing stops us before swapon */
		if (!ret)
			on_err = swapon_again(dev, cycle);
		/* one string: lab/guest/runner.py's SWAPCYCLE_RE parses it */
		klog("swapcycle: cycle=%" PRIu64 " swapoff=%s off_ms=%.3f swapon=%s push_ms=%.3f",
		     cycle,
		     ret ? errno_name(off_err, b1, sizeof(b1)) : "ok",
		     (double)(t1 - t0) / 1e6,
		     ret ? "skipped" : on_err ?
		     errno_name(on_err, b2, sizeof(b2)) : "ok",
		     (double)(t0 - tp) / 1e6);
		if (on_err) {
			klog("swapcycle: swapon %s failed %d times, swap stays "
			     "off; giving up", dev, SWAPON_TRIES);
			fprintf(stderr, "swapcycle: swapon %s: %s; swap stays "
				"off\n", dev, strerror(on_err));
			_exit(EXIT_ERROR);
		}
		if (stop_sig)
			_exit(EXIT_OK);
	}
	_exit(EXIT_OK);
}

int main(int argc, char **argv)
{
	char dev[PATH_MAX];
	struct opts o;
	pid_t self = getpid(), pid;
	int ret;

	ret = parse_args(&o, argc, argv);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	ret = find_swap(o.device, dev, sizeof(dev));
	if (ret) {
		if (ret != -ENOENT)
			fprintf(stderr, "swapcycle: %s: %s\n",
				o.device && ret != -ENAMETOOLONG ?
				o.device : PROC_SWAPS, strerror(-ret));
		else if (o.device)
			fprintf(stderr, "swapcycle: %s is not an active swap "
				"area (%s)\n", o.device, PROC_SWAPS);
		else
			fprintf(stderr, "swapcycle: no active swap area in "
				"%s\n", PROC_SWAPS);
		return EXIT_ERROR;
	}
	if (o.device)		/* as given: what swapon should see again */
		snprintf(dev, sizeof(dev), "%s", o.device);

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "swapcycle: fork: %s\n", strerror(errno));
		return EXIT_ERROR;
	}
	if (pid == 0)
		cycler(&o, dev, self);
	execvp(o.argv[0], o.argv);
	ret = errno;
	fprintf(stderr, "swapcycle: %s: %s\n", o.argv[0], strerror(ret));
	return ret == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
}
