// SPDX-License-Identifier: GPL-2.0
/*
 * kvstore: a real key-value store under swap.  Starts a Redis server
 * (the user's binary, brought into the guest with its libraries), loads
 * a dataset larger than RAM through the server's own protocol, queries
 * it with redis-benchmark (uniform keys, then a hot tenth of them:
 * redis-benchmark 7 draws keys uniformly only), and reads every value
 * back once at the end, by key.
 *
 * Its figures are text for the lab's `parse:` rules: redis-benchmark's
 * CSV lines go through prefixed with their phase ("uniform: ", "hot: "),
 * and the load and the read-back print "load: ..." and "verify: ...".
 * A value read back wrong, or missing, is a data error: exit 3.
 *
 * Keys are "key:%012llu", the form redis-benchmark's -r option draws
 * ("key:__rand_int__"), so the benchmark reads the keys loaded here.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "parse.h"
#include "pattern.h"
#include "procfs.h"

#define PROG "kvstore"
#define KEY_FMT "key:%012llu"
#define KEY_LEN 16
#define BATCH 64		/* commands a round trip while loading, verifying */
#define START_WAIT_S 120	/* a server's start under TCG takes seconds */
#define MAX_VALUE (1 << 20)

struct opts {
	const char *socket;	/* where the server listens */
	const char *server;
	const char *benchmark;
	double frac_mem;	/* dataset as a share of MemTotal, or */
	double dataset;		/* bytes, when given */
	unsigned int value_size;
	unsigned int requests;
	unsigned int clients;
	double hot_frac;
	uint64_t seed;
};

struct conn {
	int fd;
	char *buf;		/* replies, read ahead */
	size_t len, pos, cap;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: " PROG " --server PATH --benchmark PATH [--socket PATH]\n"
		"  [--dataset-frac-mem F | --dataset SIZE] [--value-size N]\n"
		"  [--requests N] [--clients N] [--hot-frac F] [--seed N]\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	int i;

	*o = (struct opts){ .socket = "/tmp/swaplab-kvstore.sock",
			    .frac_mem = 1.3, .value_size = 4000,
			    .requests = 20000, .clients = 4,
			    .hot_frac = 0.1, .seed = 1 };
	for (i = 1; i < argc; i++) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		unsigned int n;
		int bad = 0;

		if (!v) {
			usage();
			return opt_error(PROG, "%s needs a value", k);
		}
		i++;
		if (!strcmp(k, "--server")) {
			o->server = v;
		} else if (!strcmp(k, "--socket")) {
			o->socket = v;
		} else if (!strcmp(k, "--benchmark")) {
			o->benchmark = v;
		} else if (!strcmp(k, "--dataset-frac-mem")) {
			bad = parse_pos_double(v, 16, &o->frac_mem);
		} else if (!strcmp(k, "--dataset")) {
			bad = parse_size(v, &o->dataset);
		} else if (!strcmp(k, "--value-size")) {
			bad = parse_uint(v, MAX_VALUE, &o->value_size);
		} else if (!strcmp(k, "--requests")) {
			bad = parse_uint(v, 1U << 30, &o->requests);
		} else if (!strcmp(k, "--clients")) {
			bad = parse_uint(v, 1024, &o->clients);
		} else if (!strcmp(k, "--hot-frac")) {
			bad = parse_share(v, 1, &o->hot_frac);
		} else if (!strcmp(k, "--seed")) {
			bad = parse_uint(v, UINT32_MAX, &n);
			o->seed = n;
		} else {
			usage();
			return opt_error(PROG, "unknown option %s", k);
		}
		if (bad)
			return opt_error(PROG, "bad value for %s: %s", k, v);
	}
	if (!o->server || !o->benchmark) {
		usage();
		return opt_error(PROG, "--server and --benchmark are needed");
	}
	if (strlen(o->socket) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return opt_error(PROG, "--socket %s is too long", o->socket);
	return 0;
}

/* The value of key @i: incompressible, and different for every key. */
static void value_of(uint64_t seed, uint64_t i, char *v, unsigned int n)
{
	uint64_t st = seed ^ (i * 0x9e3779b97f4a7c15ULL), x;
	unsigned int off;

	for (off = 0; off < n; off += sizeof(x)) {
		x = splitmix64(&st);
		memcpy(v + off, &x, n - off < sizeof(x) ? n - off : sizeof(x));
	}
}

static int conn_open(struct conn *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	strcpy(sa.sun_path, path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		close(c->fd);
		c->fd = -1;
		return err;
	}
	return 0;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Make @need bytes readable at c->buf + c->pos. */
static int fill(struct conn *c, size_t need)
{
	if (c->pos + need <= c->len)
		return 0;
	memmove(c->buf, c->buf + c->pos, c->len - c->pos);
	c->len -= c->pos;
	c->pos = 0;
	if (need > c->cap) {
		char *b = realloc(c->buf, need);

		if (!b)
			return -1;
		c->buf = b;
		c->cap = need;
	}
	while (c->len < need) {
		ssize_t r = read(c->fd, c->buf + c->len, c->cap - c->len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c->len += (size_t)r;
	}
	return 0;
}

/* One reply line, without its CRLF, into @line (NUL-terminated). */
static int reply_line(struct conn *c, char *line, size_t size)
{
	size_t n;

	for (n = 1;; n++) {
		if (fill(c, n + 1))
			return -1;
		if (c->buf[c->pos + n - 1] == '\r' && c->buf[c->pos + n] == '\n')
			break;
		if (n + 1 >= size)
			return -1;
	}
	memcpy(line, c->buf + c->pos, n - 1);
	line[n - 1] = '\0';
	c->pos += n + 1;
	return 0;
}

static size_t put_key(char *out, uint64_t i)
{
	return (size_t)sprintf(out, "$%d\r\n" KEY_FMT "\r\n", KEY_LEN,
			       (unsigned long long)i);
}

/* SET keys [@from, @to) in one round trip. */
static int set_batch(struct conn *c, char *out, const struct opts *o,
		     uint64_t from, uint64_t to)
{
	char line[256];
	size_t n = 0;
	uint64_t i;

	for (i = from; i < to; i++) {
		n += (size_t)sprintf(out + n, "*3\r\n$3\r\nSET\r\n");
		n += put_key(out + n, i);
		n += (size_t)sprintf(out + n, "$%u\r\n", o->value_size);
		value_of(o->seed, i, out + n, o->value_size);
		n += o->value_size;
		memcpy(out + n, "\r\n", 2);
		n += 2;
	}
	if (send_all(c->fd, out, n))
		return -1;
	for (i = from; i < to; i++) {
		if (reply_line(c, line, sizeof(line)))
			return -1;
		if (strcmp(line, "+OK")) {
			fprintf(stderr, PROG ": SET " KEY_FMT ": %s\n",
				(unsigned long long)i, line);
			return -1;
		}
	}
	return 0;
}

struct tally {
	uint64_t mismatched, missing;
};

/* GET keys [@from, @to) in one round trip and compare each value. */
static int get_batch(struct conn *c, char *out, char *want,
		     const struct opts *o, uint64_t from, uint64_t to,
		     struct tally *t)
{
	char line[256];
	size_t n = 0;
	uint64_t i;

	for (i = from; i < to; i++) {
		n += (size_t)sprintf(out + n, "*2\r\n$3\r\nGET\r\n");
		n += put_key(out + n, i);
	}
	if (send_all(c->fd, out, n))
		return -1;
	for (i = from; i < to; i++) {
		long len;

		if (reply_line(c, line, sizeof(line)) || line[0] != '$')
			return -1;
		len = strtol(line + 1, NULL, 10);
		if (len < 0) {
			t->missing++;
			continue;
		}
		if (fill(c, (size_t)len + 2))
			return -1;
		value_of(o->seed, i, want, o->value_size);
		if ((size_t)len != o->value_size ||
		    memcmp(c->buf + c->pos, want, o->value_size)) {
			if (!t->mismatched)
				fprintf(stderr, PROG ": " KEY_FMT
					" read back wrong\n",
					(unsigned long long)i);
			t->mismatched++;
		}
		c->pos += (size_t)len + 2;
	}
	return 0;
}

static pid_t start_server(const struct opts *o)
{
	pid_t pid = fork();

	if (pid == 0) {
		char *argv[] = {
			"redis-server", "--port", "0",
			"--unixsocket", (char *)o->socket,
			"--unixsocketperm", "700", "--save", "",
			"--appendonly", "no", "--dir", "/tmp",
			"--protected-mode", "no",
			/* THP as the cell's sysfs sets it: the lab's question */
			"--disable-thp", "no", "--loglevel", "warning", NULL,
		};

		/* the server's log is kept with stderr, never parsed */
		dup2(2, 1);
		execv(o->server, argv);
		fprintf(stderr, PROG ": exec %s: %s\n", o->server,
			strerror(errno));
		_exit(127);
	}
	return pid;
}

static int wait_for_server(struct conn *c, const char *path, pid_t server)
{
	double until = now() + START_WAIT_S;

	while (now() < until) {
		if (!conn_open(c, path))
			return 0;
		if (waitpid(server, NULL, WNOHANG) == server) {
			fprintf(stderr, PROG ": the server exited at start\n");
			return -1;
		}
		usleep(100 * 1000);
	}
	fprintf(stderr, PROG ": no server on %s after %d s\n", path,
		START_WAIT_S);
	return -1;
}

/*
 * redis-benchmark's GET test on keys [0, @keys), its CSV lines printed
 * with @phase before them.
 */
static int benchmark(const struct opts *o, const char *phase, uint64_t keys)
{
	char requests[24], clients[24], space[24], line[512];
	int pipefd[2], status;
	FILE *in;
	pid_t pid;

	snprintf(requests, sizeof(requests), "%u", o->requests);
	snprintf(clients, sizeof(clients), "%u", o->clients);
	snprintf(space, sizeof(space), "%llu", (unsigned long long)keys);
	if (pipe(pipefd))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *argv[] = {
			"redis-benchmark", "-s", (char *)o->socket,
			"-n", requests, "-c", clients, "-r", space,
			"-t", "get", "--csv", NULL,
		};

		dup2(pipefd[1], 1);
		close(pipefd[0]);
		close(pipefd[1]);
		execv(o->benchmark, argv);
		fprintf(stderr, PROG ": exec %s: %s\n", o->benchmark,
			strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	in = fdopen(pipefd[0], "r");
	if (!in)
		return -1;
	while (fgets(line, sizeof(line), in))
		printf("%s: %s", phase, line);
	fclose(in);
	fflush(stdout);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, PROG ": redis-benchmark (%s) failed\n", phase);
		return -1;
	}
	return 0;
}

/* The server's used_memory, from INFO memory; 0 when not found. */
static unsigned long long used_memory(struct conn *c)
{
	static const char cmd[] = "*2\r\n$4\r\nINFO\r\n$6\r\nmemory\r\n";
	unsigned long long v = 0;
	char line[256], *at;
	long len;

	if (send_all(c->fd, cmd, sizeof(cmd) - 1) ||
	    reply_line(c, line, sizeof(line)) || line[0] != '$')
		return 0;
	len = strtol(line + 1, NULL, 10);
	if (len <= 0 || fill(c, (size_t)len + 2))
		return 0;
	at = memmem(c->buf + c->pos, (size_t)len, "\nused_memory:", 13);
	if (at)
		v = strtoull(at + 13, NULL, 10);
	c->pos += (size_t)len + 2;
	return v;
}

static int run(const struct opts *o, struct conn *c, char *out, char *want)
{
	uint64_t mem, swap, keys, i, hot;
	struct tally t = { 0, 0 };
	double t0;

	if (meminfo_read(&mem, &swap))
		return opt_error(PROG, "cannot read /proc/meminfo");
	keys = (uint64_t)((o->dataset ? o->dataset : o->frac_mem * mem) /
			  o->value_size);
	if (!keys)
		return opt_error(PROG, "the dataset holds no value");
	hot = (uint64_t)(keys * o->hot_frac);
	printf("dataset: keys=%llu value_bytes=%u bytes=%llu mem_total=%llu\n",
	       (unsigned long long)keys, o->value_size,
	       (unsigned long long)(keys * o->value_size),
	       (unsigned long long)mem);
	fflush(stdout);

	t0 = now();
	for (i = 0; i < keys; i += BATCH)
		if (set_batch(c, out, o, i,
			      i + BATCH < keys ? i + BATCH : keys))
			return opt_error(PROG, "loading failed at key %llu",
					 (unsigned long long)i);
	printf("load: keys=%llu seconds=%.3f used_memory=%llu\n",
	       (unsigned long long)keys, now() - t0, used_memory(c));
	fflush(stdout);

	if (benchmark(o, "uniform", keys) ||
	    (hot && benchmark(o, "hot", hot)))
		return -1;

	t0 = now();
	for (i = 0; i < keys; i += BATCH)
		if (get_batch(c, out, want, o, i,
			      i + BATCH < keys ? i + BATCH : keys, &t))
			return opt_error(PROG, "reading back failed at key %llu",
					 (unsigned long long)i);
	printf("verify: keys=%llu mismatched=%llu missing=%llu seconds=%.3f\n",
	       (unsigned long long)keys, (unsigned long long)t.mismatched,
	       (unsigned long long)t.missing, now() - t0);
	fflush(stdout);
	return t.mismatched || t.missing ? 3 : 0;
}

int main(int argc, char **argv)
{
	static const char shutdown_cmd[] =
		"*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n";
	struct conn c = { .fd = -1 };
	struct opts o;
	char *out, *want;
	pid_t server;
	int ret;

	if (parse_opts(argc, argv, &o))
		return 2;
	/* a batch of SETs: header, key and value per command */
	out = malloc((size_t)BATCH * (o.value_size + 64));
	want = malloc(o.value_size);
	c.cap = (size_t)o.value_size + 4096;
	c.buf = malloc(c.cap);
	if (!out || !want || !c.buf)
		return opt_error(PROG, "out of memory"), 1;
	unlink(o.socket);
	server = start_server(&o);
	if (server < 0 || wait_for_server(&c, o.socket, server))
		ret = 1;
	else
		ret = run(&o, &c, out, want);
	if (ret < 0)
		ret = 1;
	if (c.fd >= 0)
		send_all(c.fd, shutdown_cmd, sizeof(shutdown_cmd) - 1);
	if (server > 0) {
		int status;

		if (ret)
			kill(server, SIGKILL);
		waitpid(server, &status, 0);
	}
	return ret;
}
