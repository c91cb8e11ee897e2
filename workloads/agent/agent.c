// SPDX-License-Identifier: GPL-2.0
/*
 * swaplab-agent: the guest's /init.
 *
 * Mounts what the cell needs, applies its sysfs/sysctl settings, makes a
 * fresh swap area on the backend's device, snapshots the memory counters,
 * runs the workload (optionally tracing do_swap_page), collects the kernel
 * log and sends ONE framed, checksummed JSON result to the host over a
 * virtio-serial port, then powers the guest off.
 *
 * Frame: "SWAPLAB-FRAME/1 len=N crc32=XXXXXXXX\n" N bytes of JSON
 * "\nSWAPLAB-END\n" (CRC-32 as zlib computes it, over the N bytes).
 *
 * Run as a normal process (not PID 1) it is a host test: argv[1] is the
 * config, argv[2] the file the frame goes to; it never touches mounts,
 * settings, devices or tracing then.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>

#include "conf.h"
#include "jw.h"
#include "swapdev.h"
#include "swapfile.h"
#include "trace.h"
#include "util.h"

#define AGENT_VERSION	"2"
#define CONF_PATH	"/etc/swaplab/cell.conf"
#define STDOUT_MAX	(16u << 20)
#define STDERR_MAX	(1u << 20)

static bool pid1;
static struct jw errs;		/* [{"step":..., "error":...}] */
static struct jw warns;

static void note(struct jw *list, const char *step, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void note(struct jw *list, const char *step, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	jw_obj_begin(list, NULL);
	jw_str(list, "step", step);
	jw_str(list, "error", msg);
	jw_obj_end(list);
	say("%s: %s: %s", list == &errs ? "error" : "warning", step, msg);
}

static void do_mount(const char *src, const char *dir, const char *type,
		     bool required)
{
	mkdir(dir, 0755);
	if (mount(src, dir, type, MS_NOSUID, NULL) < 0 && errno != EBUSY)
		note(required ? &errs : &warns, "mount", "%s on %s: %s", type,
		     dir, strerror(errno));
}

static void mounts(void)
{
	do_mount("proc", "/proc", "proc", true);
	do_mount("sysfs", "/sys", "sysfs", true);
	do_mount("devtmpfs", "/dev", "devtmpfs", true);
	do_mount("tmpfs", "/tmp", "tmpfs", false);
	do_mount("tmpfs", "/run", "tmpfs", false);
	if (access("/sys/kernel/tracing", F_OK) == 0)
		do_mount("tracefs", "/sys/kernel/tracing", "tracefs", false);
}

static void power_off(void)
{
	if (!pid1)
		exit(0);
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

static void setting(struct jw *w, const char *kind, const char *name,
		    const char *path, const char *val)
{
	char back[512];
	int ret;

	jw_obj_begin(w, NULL);
	jw_str(w, "kind", kind);
	jw_str(w, "name", name);
	jw_str(w, "path", path);
	jw_str(w, "value", val);
	ret = write_knob(path, val);
	jw_bool(w, "ok", ret == 0);
	if (ret) {
		jw_str(w, "error", strerror(-ret));
		note(&errs, "settings", "%s <- %s: %s", path, val,
		     strerror(-ret));
	}
	if (read_line(path, back, sizeof(back)) == 0)
		jw_str(w, "readback", back);
	jw_obj_end(w);
}

static void apply_settings(struct jw *w, const struct conf *c)
{
	char path[PATH_MAX];
	int i;

	jw_arr_begin(w, "settings");
	for (i = 0; i < c->nsysfs; i++) {
		snprintf(path, sizeof(path), "/sys/%s", c->sysfs[i].key);
		setting(w, "sysfs", c->sysfs[i].key, path, c->sysfs[i].val);
	}
	for (i = 0; i < c->nsysctl; i++) {
		char *p;

		snprintf(path, sizeof(path), "/proc/sys/%s", c->sysctl[i].key);
		for (p = path + 10; *p; p++)
			if (*p == '.')
				*p = '/';
		setting(w, "sysctl", c->sysctl[i].key, path, c->sysctl[i].val);
	}
	jw_arr_end(w);
}

static void file_str(struct jw *w, const char *key, const char *path)
{
	struct buf b = { 0 };

	if (read_file(path, &b) == 0)
		jw_strn(w, key, b.data ? b.data : "", b.len);
	else
		jw_null(w, key);
	buf_free(&b);
}

static void dir_files(struct jw *w, const char *dir, const char *prefix)
{
	char path[PATH_MAX], key[PATH_MAX], val[4096];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) < 0)
			continue;
		snprintf(key, sizeof(key), "%s%s", prefix, de->d_name);
		if (S_ISDIR(st.st_mode)) {
			snprintf(key, sizeof(key), "%s%s/", prefix, de->d_name);
			dir_files(w, path, key);
		} else if (S_ISREG(st.st_mode) && (st.st_mode & 0444) &&
			   read_line(path, val, sizeof(val)) == 0) {
			jw_str(w, key, val);
		}
	}
	closedir(d);
}

static void snapshot(struct jw *w, const char *key)
{
	jw_obj_begin(w, key);
	jw_real(w, "uptime_s", uptime_s());
	file_str(w, "vmstat", "/proc/vmstat");
	file_str(w, "meminfo", "/proc/meminfo");
	file_str(w, "diskstats", "/proc/diskstats");
	file_str(w, "swaps", "/proc/swaps");
	jw_obj_begin(w, "sysfs");
	dir_files(w, "/sys/kernel/mm/swap", "kernel/mm/swap/");
	dir_files(w, "/sys/kernel/mm/transparent_hugepage",
		  "kernel/mm/transparent_hugepage/");
	jw_obj_end(w);
	jw_obj_end(w);
}

static void kernel_info(struct jw *w)
{
	struct utsname u;

	jw_obj_begin(w, "kernel");
	if (uname(&u) == 0) {
		jw_str(w, "release", u.release);
		jw_str(w, "version", u.version);
		jw_str(w, "machine", u.machine);
	}
	file_str(w, "cmdline", "/proc/cmdline");
	jw_obj_end(w);
}

/*
 * What started the kernel: /sys/firmware/efi exists only when the kernel
 * came up through its EFI stub (OVMF), not under SeaBIOS. Null when sysfs
 * is not there to tell.
 */
static void firmware_info(struct jw *w)
{
	char val[64];

	jw_obj_begin(w, "firmware");
	if (access("/sys/firmware", F_OK) < 0) {
		jw_null(w, "efi");
		jw_null(w, "efi_platform_size");
	} else {
		jw_bool(w, "efi", access("/sys/firmware/efi", F_OK) == 0);
		if (read_line("/sys/firmware/efi/fw_platform_size", val,
			      sizeof(val)) == 0)
			jw_str(w, "efi_platform_size", val);
		else
			jw_null(w, "efi_platform_size");
	}
	jw_obj_end(w);
}

/*
 * What the root file system is. The lab boots with rootfstype=ramfs so
 * that the initramfs (busybox, this agent, the workloads) cannot be
 * swapped: on tmpfs its pages went out under the workload's pressure and
 * came back as major faults and swap-ins the workload did not cause.
 */
static void rootfs_info(struct jw *w)
{
	struct statfs s;
	char magic[32];

	jw_obj_begin(w, "rootfs");
	if (statfs("/", &s) < 0) {
		jw_null(w, "type");
	} else if (s.f_type == RAMFS_MAGIC) {
		jw_str(w, "type", "ramfs");
	} else if (s.f_type == TMPFS_MAGIC) {
		jw_str(w, "type", "tmpfs");
	} else {
		snprintf(magic, sizeof(magic), "0x%lx",
			 (unsigned long)s.f_type);
		jw_str(w, "type", magic);
	}
	jw_obj_end(w);
}

struct capture {
	int fd;
	struct buf b;
	size_t max;
	unsigned long long dropped;
};

static void drain(struct capture *c)
{
	char tmp[16384];
	ssize_t n = read(c->fd, tmp, sizeof(tmp));

	if (n <= 0) {
		if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
			close(c->fd);
			c->fd = -1;
		}
		return;
	}
	if (c->b.len + (size_t)n > c->max) {
		size_t room = c->max > c->b.len ? c->max - c->b.len : 0;

		c->dropped += (size_t)n - room;
		n = (ssize_t)room;
	}
	if (n)
		buf_put(&c->b, tmp, (size_t)n);
}

static void child_exec(const struct conf *c, int out, int err)
{
	static char *base_env[] = {
		"PATH=/bin:/sbin:/usr/bin:/usr/sbin", "HOME=/root",
		"TERM=linux", NULL,
	};
	char *env[CONF_MAX_LIST + 8];
	int i, n = 0;

	for (i = 0; base_env[i]; i++)
		env[n++] = base_env[i];
	for (i = 0; i < c->nenv; i++)
		env[n++] = c->env[i];
	env[n] = NULL;
	setsid();
	if (out >= 0) {
		dup2(out, 1);
		dup2(err, 2);
		close(out);
		close(err);
		i = open("/dev/null", O_RDONLY);
		if (i > 0) {
			dup2(i, 0);
			close(i);
		}
	}
	signal(SIGPIPE, SIG_DFL);
	if (chdir("/") < 0)
		_exit(126);
	execvpe(c->argv[0], c->argv, env);
	fprintf(stderr, "swaplab-agent: exec %s: %s\n", c->argv[0],
		strerror(errno));
	_exit(127);
}

static void run_workload(struct jw *w, const struct conf *c)
{
	struct capture out = { -1, { 0 }, STDOUT_MAX, 0 };
	struct capture err = { -1, { 0 }, STDERR_MAX, 0 };
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 };
	struct zram_peak zram = { 0 };
	double start, deadline, sampled = 0;
	bool timed_out = false;
	struct rusage ru;
	int status = 0, i;
	pid_t pid;

	jw_obj_begin(w, "workload");
	jw_arr_begin(w, "argv");
	for (i = 0; i < c->argc; i++)
		jw_str(w, NULL, c->argv[i]);
	jw_arr_end(w);
	jw_bool(w, "interactive", c->interactive);
	if (!c->interactive && (pipe2(po, O_CLOEXEC) < 0 ||
				pipe2(pe, O_CLOEXEC) < 0)) {
		note(&errs, "workload", "pipe: %s", strerror(errno));
		jw_obj_end(w);
		return;
	}
	start = mono_s();
	jw_real(w, "start_uptime_s", uptime_s());
	say("workload start uptime=%.3f", uptime_s());
	pid = fork();
	if (pid < 0) {
		note(&errs, "workload", "fork: %s", strerror(errno));
		jw_obj_end(w);
		return;
	}
	if (pid == 0)
		child_exec(c, po[1], pe[1]);
	if (!c->interactive) {
		close(po[1]);
		close(pe[1]);
		out.fd = po[0];
		err.fd = pe[0];
	}
	deadline = c->timeout_s > 0 ? start + c->timeout_s : 0;
	for (;;) {
		struct pollfd pfd[2];
		int nfd = 0, ms = 1000;

		/* at most once a second: the loop wakes at least that often */
		if (c->zram_comp && mono_s() - sampled >= 1.0) {
			zram_sample(&zram, c->device);
			sampled = mono_s();
		}

		if (out.fd >= 0)
			pfd[nfd++] = (struct pollfd){ out.fd, POLLIN, 0 };
		if (err.fd >= 0)
			pfd[nfd++] = (struct pollfd){ err.fd, POLLIN, 0 };
		if (deadline && !timed_out) {
			double left = deadline - mono_s();

			if (left <= 0) {
				timed_out = true;
				kill(-pid, SIGKILL);
				kill(pid, SIGKILL);
				say("workload timed out after %d s", c->timeout_s);
			} else if (left < 1) {
				ms = (int)(left * 1000) + 1;
			}
		}
		if (!nfd) {
			/* no pipes left (or interactive): wait for exit */
			pid_t r = wait4(pid, &status, WNOHANG, &ru);

			if (r == pid)
				break;
			if (r < 0) {
				note(&errs, "workload", "wait: %s",
				     strerror(errno));
				break;
			}
			usleep(ms > 50 ? 50000 : (useconds_t)ms * 1000);
			continue;
		}
		if (poll(pfd, (nfds_t)nfd, ms) < 0 && errno != EINTR)
			break;
		for (i = 0; i < nfd; i++) {
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			drain(pfd[i].fd == out.fd ? &out : &err);
		}
	}
	jw_real(w, "end_uptime_s", uptime_s());
	jw_real(w, "wall_s", mono_s() - start);
	if (c->zram_comp) {
		zram_sample(&zram, c->device);
		zram_report(w, &zram);
	}
	jw_i64(w, "pid", pid);
	jw_bool(w, "timed_out", timed_out);
	if (WIFEXITED(status)) {
		jw_i64(w, "exit_code", WEXITSTATUS(status));
		jw_null(w, "signal");
	} else {
		jw_null(w, "exit_code");
		jw_i64(w, "signal", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	}
	jw_obj_begin(w, "rusage");
	jw_real(w, "utime_s", (double)ru.ru_utime.tv_sec +
	       (double)ru.ru_utime.tv_usec / 1e6);
	jw_real(w, "stime_s", (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6);
	jw_i64(w, "maxrss_kb", ru.ru_maxrss);
	jw_i64(w, "majflt", ru.ru_majflt);
	jw_i64(w, "minflt", ru.ru_minflt);
	jw_obj_end(w);
	if (!c->interactive) {
		jw_strn(w, "stdout", out.b.data ? out.b.data : "", out.b.len);
		jw_u64(w, "stdout_dropped_bytes", out.dropped);
		jw_strn(w, "stderr", err.b.data ? err.b.data : "", err.b.len);
		jw_u64(w, "stderr_dropped_bytes", err.dropped);
	}
	buf_free(&out.b);
	buf_free(&err.b);
	jw_obj_end(w);
	say("workload end uptime=%.3f status=0x%x", uptime_s(), status);
}

static const char *const log_patterns[] = {
	"WARNING:", "BUG:", "Oops", "Kernel panic", "KASAN",
	"possible circular locking dependency", "possible recursive locking",
	"inconsistent lock state", "lockdep", "general protection fault",
	"Out of memory", "oom-kill", "soft lockup", "hard LOCKUP",
	"rcu_sched self-detected stall", "blocked for more than",
	"Call Trace:", NULL,
};

static void kernel_log(struct jw *w)
{
	struct buf b = { 0 };
	char *line, *next;
	int i;

	jw_obj_begin(w, "kernel_log");
	if (klog_read(&b) < 0 || !b.data) {
		jw_null(w, "text");
		jw_obj_end(w);
		return;
	}
	jw_strn(w, "text", b.data, b.len);
	jw_arr_begin(w, "flags");
	for (i = 0; log_patterns[i]; i++) {
		const char *first = NULL;
		size_t first_len = 0;
		int count = 0;

		for (line = b.data; line && *line; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next = '\0';
			if (strstr(line, log_patterns[i])) {
				if (!count++) {
					first = line;
					first_len = strlen(line);
				}
			}
			if (next)
				*next++ = '\n';
		}
		if (!count)
			continue;
		jw_obj_begin(w, NULL);
		jw_str(w, "pattern", log_patterns[i]);
		jw_i64(w, "count", count);
		jw_strn(w, "first", first, first_len);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	buf_free(&b);
}

static int find_port(const char *name, char *dev, size_t size, int wait_s)
{
	double until = mono_s() + wait_s;

	for (;;) {
		DIR *d = opendir("/sys/class/virtio-ports");
		struct dirent *de;

		while (d && (de = readdir(d))) {
			char path[PATH_MAX], val[256];

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path),
				 "/sys/class/virtio-ports/%s/name", de->d_name);
			if (read_line(path, val, sizeof(val)) == 0 &&
			    !strcmp(val, name)) {
				snprintf(dev, size, "/dev/%s", de->d_name);
				closedir(d);
				if (access(dev, W_OK) == 0)
					return 0;
				d = NULL;
				break;
			}
		}
		if (d)
			closedir(d);
		if (mono_s() >= until)
			return -ENOENT;
		usleep(50000);
	}
}

static void send_frame(const struct conf *c, const char *out_path,
		       struct buf *payload)
{
	struct buf frame = { 0 };
	char dev[PATH_MAX];
	uint32_t crc = crc32_ieee(payload->data, payload->len);
	size_t off = 0, len;
	int fd;

	if (!strcmp(c->test, "no-frame")) {
		say("test switch: no frame sent");
		return;
	}
	buf_printf(&frame, "SWAPLAB-FRAME/1 len=%zu crc32=%08x\n",
		   payload->len, crc);
	buf_put(&frame, payload->data, payload->len);
	buf_puts(&frame, "\nSWAPLAB-END\n");
	len = frame.len;
	if (!strcmp(c->test, "corrupt-frame")) {
		/* one flipped bit in the middle of the payload */
		frame.data[frame.len - payload->len / 2 - 13] ^= 0x01;
		say("test switch: frame corrupted");
	} else if (!strcmp(c->test, "truncate-frame")) {
		len = frame.len / 2;
		say("test switch: frame truncated");
	}
	if (out_path) {
		fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			  0644);
	} else if (find_port(c->result_port, dev, sizeof(dev), 5) == 0) {
		fd = open(dev, O_WRONLY | O_CLOEXEC);
	} else {
		say("error: no virtio port named %s: no result sent",
		    c->result_port);
		buf_free(&frame);
		return;
	}
	if (fd < 0) {
		say("error: cannot open the result channel: %s",
		    strerror(errno));
		buf_free(&frame);
		return;
	}
	while (off < len) {
		ssize_t n = write(fd, frame.data + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			say("error: writing the result: %s", strerror(errno));
			break;
		}
		off += (size_t)n;
	}
	fsync(fd);
	close(fd);
	say("result sent: %zu bytes, crc32=%08x", off, crc);
	buf_free(&frame);
}

static void reap(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(int argc, char **argv)
{
	const char *conf_path = CONF_PATH, *out_path = NULL;
	double t_start = uptime_s(), t_settings = 0, t_swap = 0;
	struct trace tr;
	struct conf c;
	struct jw w = { 0 };
	bool swap_ok = true, tracing = false;
	char err[512];
	int ret, i;

	pid1 = getpid() == 1;
	if (!pid1) {
		if (argc != 3) {
			fprintf(stderr, "usage: %s CONFIG OUTPUT  (host test; "
				"as PID 1 it is the guest's init)\n", argv[0]);
			return 2;
		}
		conf_path = argv[1];
		out_path = argv[2];
	}
	jw_arr_begin(&errs, NULL);
	jw_arr_begin(&warns, NULL);
	if (pid1)
		mounts();
	say("start uptime=%.3f", t_start);
	ret = conf_load(&c, conf_path);
	if (ret)
		note(&errs, "config", "%s: %s", conf_path, strerror(-ret));
	for (i = 0; i < c.nunknown; i++)
		note(&warns, "config", "unknown line or key '%s'",
		     c.unknown[i]);
	if (!strcmp(c.mode, "probe")) {
		say("probe ok");
		power_off();
	}
	if (!strcmp(c.test, "crash-agent")) {
		say("test switch: agent crashes");
		abort();
	}

	jw_obj_begin(&w, NULL);
	jw_str(&w, "schema", "swaplab-agent/1");
	jw_str(&w, "agent_version", AGENT_VERSION);
	jw_str(&w, "cell", c.cell);
	jw_bool(&w, "pid1", pid1);
	kernel_info(&w);
	firmware_info(&w);
	rootfs_info(&w);
	if (pid1) {
		apply_settings(&w, &c);
		t_settings = uptime_s();
		if (c.device) {
			ret = swapdev_setup(&w, &c, err, sizeof(err));
			if (ret) {
				note(&errs, "swap", "%s", err);
				swap_ok = false;
			}
		}
		t_swap = uptime_s();
	}

	snapshot(&w, "before");
	if (c.trace && pid1) {
		if (trace_start(&tr, c.trace_func, c.trace_buffer_kb) < 0)
			note(&errs, "trace", "%s", tr.err);
		tracing = true;
	}
	if (!strcmp(c.test, "hang-agent")) {
		say("test switch: agent hangs");
		for (;;)
			pause();
	}
	if (c.argc && swap_ok)
		run_workload(&w, &c);
	else
		jw_null(&w, "workload");
	if (tracing)
		trace_finish(&tr, &w);
	reap();
	snapshot(&w, "after");
	/* after the counters: its reads are not the workload's */
	if (pid1 && c.swap_file && swap_ok)
		swapfile_check(&w);
	if (pid1)
		kernel_log(&w);
	jw_obj_begin(&w, "times");
	jw_real(&w, "agent_start_uptime_s", t_start);
	jw_real(&w, "settings_done_uptime_s", t_settings);
	jw_real(&w, "swap_ready_uptime_s", t_swap);
	jw_real(&w, "result_uptime_s", uptime_s());
	jw_obj_end(&w);
	jw_arr_end(&errs);
	jw_arr_end(&warns);
	jw_raw(&w, "errors", errs.b.data);
	jw_raw(&w, "warnings", warns.b.data);
	jw_str(&w, "status", errs.b.len > 2 ? "error" : "ok");
	jw_obj_end(&w);
	send_frame(&c, out_path, &w.b);
	power_off();
	return 0;
}
