/*
 * wis: will-it-scale style scalability testcases, for threads or processes.
 *
 * Each task runs one testcase's tight loop on a CPU of its own (round-robin over
 * the allowed CPUs) and publishes its operation count in a cache line of its own,
 * in a MAP_SHARED mapping so that forked processes share it too.  The parent
 * samples the counters every interval, discards the warm-up, and prints key=value
 * lines for perflab:
 *
 *   wis testcase=T mode=M tasks=N warmup_s=W duration_s=D interval_s=I cpus=C,...
 *   warmup elapsed_s=... ops_per_s=...
 *   interval n=1 elapsed_s=... ops_per_s=... min_task_ops_per_s=... max_task_ops_per_s=...
 *   result total_ops_per_s=... per_task_ops_per_s=... min_task_ops_per_s=... ...
 *
 * A failing testcase (e.g. open1 cannot create its file) or a task that made no
 * progress ends the run with "wis: <reason>" on stderr and exit status 1.
 *
 * Usage: wis -t TESTCASE [-m thread|process] [-n TASKS] [-d SECONDS] [-w SECONDS]
 *            [-i SECONDS];  wis -l lists the testcases.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* 128 bytes, not 64: the adjacent-line prefetcher pairs lines, as will-it-scale notes. */
#define CACHELINE 128
#define MAX_TASKS 4096
#define NR_POLL_FILES 128
#define FILE_SIZE (1UL << 20)
#define BUFLEN 4096
#define MEMSIZE (128UL << 20)
#define ERRLEN 256

enum state { STARTING, READY, FAILED };

struct counter {
	_Alignas(CACHELINE) uint64_t ops;
};

/* Written by a task, read by the parent; apart from the counters, which are hot. */
struct status {
	int state;
	char error[ERRLEN];
	char keep_file[ERRLEN];    /* a file the parent unlinks at the end (open1) */
};

struct task {
	int cpu;
	uint64_t *ops;
	struct status *status;
	pthread_t thread;
	pid_t pid;
};

struct testcase {
	const char *name;
	const char *description;
	void (*run)(struct task *t);
};

static int process_mode;
static int start_fd = -1;          /* tasks block reading it until the parent closes it */
static const char *tmpdir = "/tmp";
static volatile sig_atomic_t interrupted;

__attribute__((noreturn, format(printf, 2, 3)))
static void fail(struct task *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->status->error, ERRLEN, fmt, ap);
	va_end(ap);
	__atomic_store_n(&t->status->state, FAILED, __ATOMIC_RELEASE);
	if (process_mode)
		_exit(1);
	pthread_exit(NULL);
}

static void publish(uint64_t *ops, uint64_t n)
{
	/* Only this task writes its counter: a plain store, no locked instruction. */
	__atomic_store_n(ops, n, __ATOMIC_RELAXED);
}

/* Setup is done: say so, then wait for the parent's start signal (EOF on start_fd). */
static void start(struct task *t)
{
	char c;

	__atomic_store_n(&t->status->state, READY, __ATOMIC_RELEASE);
	while (read(start_fd, &c, 1) < 0 && errno == EINTR)
		;
}

static int temp_file(struct task *t, size_t size, int keep)
{
	char path[ERRLEN];
	char buf[BUFLEN] = { 0 };
	int fd;

	snprintf(path, sizeof(path), "%s/wis.XXXXXX", tmpdir);
	fd = mkstemp(path);
	if (fd < 0)
		fail(t, "cannot create a temporary file in %s: %s", tmpdir, strerror(errno));
	for (size_t done = 0; done < size; done += BUFLEN)
		if (write(fd, buf, BUFLEN) != BUFLEN)
			fail(t, "cannot write %s: %s", path, strerror(errno));
	if (keep)
		memcpy(t->status->keep_file, path, sizeof(path));
	else
		unlink(path);
	return fd;
}

static void tc_getppid1(struct task *t)
{
	uint64_t *ops = t->ops, n = 0;

	start(t);
	for (;;) {
		getppid();
		publish(ops, ++n);
	}
}

static void tc_poll1(struct task *t)
{
	uint64_t *ops = t->ops, n = 0;
	int fd = temp_file(t, 0, 0);

	start(t);
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };

		if (poll(&pfd, 1, 0) < 0)
			fail(t, "poll: %s", strerror(errno));
		publish(ops, ++n);
	}
}

static void tc_poll2(struct task *t)
{
	uint64_t *ops = t->ops, n = 0;
	int fds[NR_POLL_FILES];
	struct pollfd pfd[NR_POLL_FILES];

	for (int i = 0; i < NR_POLL_FILES; i++)
		fds[i] = temp_file(t, 0, 0);
	start(t);
	for (;;) {
		for (int i = 0; i < NR_POLL_FILES; i++)
			pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLOUT };
		if (poll(pfd, NR_POLL_FILES, 0) < 0)
			fail(t, "poll: %s", strerror(errno));
		publish(ops, ++n);
	}
}

static void tc_read1(struct task *t)
{
	uint64_t *ops = t->ops, n = 0;
	char buf[BUFLEN];
	int fd = temp_file(t, FILE_SIZE, 0);

	lseek(fd, 0, SEEK_SET);
	start(t);
	for (;;) {
		ssize_t len = read(fd, buf, BUFLEN);

		if (len < 0)
			fail(t, "read: %s", strerror(errno));
		if (len == 0)
			lseek(fd, 0, SEEK_SET);
		publish(ops, ++n);
	}
}

static void tc_pread1(struct task *t)
{
	uint64_t *ops = t->ops, n = 0;
	char buf[BUFLEN];
	int fd = temp_file(t, BUFLEN, 0);

	start(t);
	for (;;) {
		if (pread(fd, buf, BUFLEN, 0) != BUFLEN)
			fail(t, "pread: %s", strerror(errno));
		publish(ops, ++n);
	}
}

static void tc_write1(struct task *t)
{
	uint64_t *ops = t->ops, n = 0;
	char buf[BUFLEN] = { 0 };
	size_t size = 0;
	int fd = temp_file(t, 0, 0);

	start(t);
	for (;;) {
		if (write(fd, buf, BUFLEN) != BUFLEN)
			fail(t, "write: %s", strerror(errno));
		size += BUFLEN;
		if (size >= FILE_SIZE) {
			size = 0;
			lseek(fd, 0, SEEK_SET);
		}
		publish(ops, ++n);
	}
}

static void tc_lseek1(struct task *t)
{
	uint64_t *ops = t->ops, n = 0;
	int fd = temp_file(t, BUFLEN, 0);

	start(t);
	for (;;) {
		if (lseek(fd, 0, SEEK_SET) < 0)
			fail(t, "lseek: %s", strerror(errno));
		publish(ops, ++n);
	}
}

static void tc_eventfd1(struct task *t)
{
	uint64_t *ops = t->ops, n = 0, value = 1;
	int fd = eventfd(0, 0);

	if (fd < 0)
		fail(t, "eventfd: %s", strerror(errno));
	start(t);
	for (;;) {
		if (write(fd, &value, sizeof(value)) != sizeof(value) ||
		    read(fd, &value, sizeof(value)) != sizeof(value))
			fail(t, "eventfd read/write: %s", strerror(errno));
		publish(ops, ++n);
	}
}

static void tc_pipe1(struct task *t)
{
	uint64_t *ops = t->ops, n = 0;
	int fd[2];
	char c = 0;

	if (pipe(fd) < 0)
		fail(t, "pipe: %s", strerror(errno));
	start(t);
	for (;;) {
		if (write(fd[1], &c, 1) != 1 || read(fd[0], &c, 1) != 1)
			fail(t, "pipe read/write: %s", strerror(errno));
		publish(ops, ++n);
	}
}

static void tc_dup1(struct task *t)
{
	uint64_t *ops = t->ops, n = 0;
	int fd = temp_file(t, 0, 0);

	start(t);
	for (;;) {
		int copy = dup(fd);

		if (copy < 0)
			fail(t, "dup: %s", strerror(errno));
		close(copy);
		publish(ops, ++n);
	}
}

static void tc_open1(struct task *t)
{
	uint64_t *ops = t->ops, n = 0;

	close(temp_file(t, 0, 1));
	start(t);
	for (;;) {
		int fd = open(t->status->keep_file, O_RDWR);

		if (fd < 0)
			fail(t, "open %s: %s", t->status->keep_file, strerror(errno));
		close(fd);
		publish(ops, ++n);
	}
}

static char *map_anonymous(struct task *t)
{
	char *p = mmap(NULL, MEMSIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		fail(t, "mmap of %lu MB: %s", MEMSIZE >> 20, strerror(errno));
	return p;
}

static void tc_page_fault1(struct task *t)
{
	uint64_t *ops = t->ops, n = 0;
	long page = sysconf(_SC_PAGESIZE);

	start(t);
	for (;;) {
		char *p = map_anonymous(t);

		for (unsigned long off = 0; off < MEMSIZE; off += page) {
			p[off] = 0;
			publish(ops, ++n);
		}
		munmap(p, MEMSIZE);
	}
}

static void tc_mmap1(struct task *t)
{
	uint64_t *ops = t->ops, n = 0;

	start(t);
	for (;;) {
		munmap(map_anonymous(t), MEMSIZE);
		publish(ops, ++n);
	}
}

struct echo {
	struct task *t;
	int in, out;
};

static void *echo_loop(void *arg)
{
	struct echo *e = arg;
	char c;

	for (;;)
		if (read(e->in, &c, 1) != 1 || write(e->out, &c, 1) != 1)
			fail(e->t, "context_switch1 helper: %s", strerror(errno));
	return NULL;
}

/* Ping-pong with a helper that inherits the task's CPU, so every message switches. */
static void tc_context_switch1(struct task *t)
{
	uint64_t *ops = t->ops, n = 0;
	int to[2], from[2];
	char c = 0;
	struct echo e;

	if (pipe(to) < 0 || pipe(from) < 0)
		fail(t, "pipe: %s", strerror(errno));
	e = (struct echo){ .t = t, .in = to[0], .out = from[1] };
	if (process_mode) {
		pid_t pid = fork();

		if (pid < 0)
			fail(t, "fork: %s", strerror(errno));
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			echo_loop(&e);
		}
	} else {
		pthread_t helper;
		int err = pthread_create(&helper, NULL, echo_loop, &e);

		if (err)
			fail(t, "pthread_create: %s", strerror(err));
	}
	start(t);
	for (;;) {
		if (write(to[1], &c, 1) != 1 || read(from[0], &c, 1) != 1)
			fail(t, "context_switch1: %s", strerror(errno));
		n += 2;
		publish(ops, n);
	}
}

static const struct testcase testcases[] = {
	{ "getppid1", "getppid (syscall baseline)", tc_getppid1 },
	{ "poll1", "poll of 1 fd", tc_poll1 },
	{ "poll2", "poll of 128 fds", tc_poll2 },
	{ "read1", "separate file read", tc_read1 },
	{ "pread1", "separate file pread", tc_pread1 },
	{ "write1", "separate file write", tc_write1 },
	{ "lseek1", "separate file lseek", tc_lseek1 },
	{ "eventfd1", "eventfd read/write of 8 bytes", tc_eventfd1 },
	{ "pipe1", "pipe read/write", tc_pipe1 },
	{ "dup1", "separate file dup/close", tc_dup1 },
	{ "open1", "separate file open/close", tc_open1 },
	{ "page_fault1", "anonymous memory page fault", tc_page_fault1 },
	{ "mmap1", "anonymous memory mmap/munmap of 128MB", tc_mmap1 },
	{ "context_switch1", "context switch via pipes", tc_context_switch1 },
};

static const struct testcase *testcase;

static void *thread_main(void *arg)
{
	testcase->run(arg);
	return NULL;
}

static struct task *tasks;
static unsigned nr_tasks, nr_started;

/* Kill and reap started process tasks; remove the files tasks keep (open1). */
static void stop_tasks(void)
{
	for (unsigned i = 0; i < nr_started; i++) {
		if (tasks[i].pid > 0) {
			kill(tasks[i].pid, SIGKILL);
			waitpid(tasks[i].pid, NULL, 0);
			tasks[i].pid = 0;
		}
		if (tasks[i].status->keep_file[0])
			unlink(tasks[i].status->keep_file);
	}
}

__attribute__((noreturn, format(printf, 1, 2)))
static void die(const char *fmt, ...)
{
	va_list ap;

	stop_tasks();
	fputs("wis: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

__attribute__((noreturn))
static void usage(const char *why)
{
	fprintf(stderr, "wis: %s\nusage: wis -t TESTCASE [-m thread|process] [-n TASKS] "
		"[-d SECONDS] [-w SECONDS] [-i SECONDS]\n       wis -l\n", why);
	exit(2);
}

static double parse_seconds(const char *text, const char *what, double minimum)
{
	char *end;
	double value = strtod(text, &end);

	if (*text == '\0' || *end != '\0' || !(value >= minimum))
		usage(what);
	return value;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_until(double when)
{
	struct timespec ts = { .tv_sec = (time_t)when };

	ts.tv_nsec = (long)((when - ts.tv_sec) * 1e9);
	while (!interrupted && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Stops everything on a failed task, a dead process or a signal. */
static void check_tasks(void)
{
	int status;
	pid_t pid;

	for (unsigned i = 0; i < nr_tasks; i++) {
		if (__atomic_load_n(&tasks[i].status->state, __ATOMIC_ACQUIRE) == FAILED)
			die("%s: task %u: %s", testcase->name, i, tasks[i].status->error);
	}
	while (process_mode && (pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (unsigned i = 0; i < nr_tasks; i++)
			if (tasks[i].pid == pid) {
				tasks[i].pid = 0;
				die("%s: task %u (pid %d) died: %s", testcase->name, i, pid,
				    WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited");
			}
	}
	if (interrupted)
		die("interrupted by SIG%s", sigabbrev_np(interrupted));
}

static void on_signal(int sig)
{
	interrupted = sig;
}

/* Sum of the counters; the least and most any one task did since ``prev``. */
static uint64_t sample(uint64_t *prev, uint64_t *min, uint64_t *max)
{
	uint64_t sum = 0;

	*min = UINT64_MAX;
	*max = 0;
	for (unsigned i = 0; i < nr_tasks; i++) {
		uint64_t value = __atomic_load_n(tasks[i].ops, __ATOMIC_RELAXED);
		uint64_t delta = value - prev[i];

		prev[i] = value;
		sum += delta;
		if (delta < *min)
			*min = delta;
		if (delta > *max)
			*max = delta;
	}
	return sum;
}

static void start_task(struct task *t, int start_write)
{
	cpu_set_t mask;

	CPU_ZERO(&mask);
	CPU_SET(t->cpu, &mask);
	if (process_mode) {
		t->pid = fork();
		if (t->pid < 0)
			die("fork: %s", strerror(errno));
		if (t->pid == 0) {
			/* a SIGKILLed parent must not leave spinning tasks behind */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(start_write);
			if (sched_setaffinity(0, sizeof(mask), &mask) < 0)
				fail(t, "cannot pin to CPU %d: %s", t->cpu, strerror(errno));
			testcase->run(t);
		}
	} else {
		pthread_attr_t attr;
		int err;

		pthread_attr_init(&attr);
		pthread_attr_setaffinity_np(&attr, sizeof(mask), &mask);
		err = pthread_create(&t->thread, &attr, thread_main, t);
		pthread_attr_destroy(&attr);
		if (err)
			die("pthread_create: %s", strerror(err));
	}
}

int main(int argc, char **argv)
{
	double duration = 5, warmup = 1, interval = 1;
	const char *name = NULL;
	long requested = 1;
	int opt, start_pipe[2], cpus[CPU_SETSIZE], nr_cpus = 0;
	cpu_set_t allowed;
	struct rlimit rl;
	struct counter *counters;
	struct status *statuses;
	uint64_t *prev, *base, total = 0, min, max, least = UINT64_MAX, most = 0;
	struct sigaction sa = { .sa_handler = on_signal };

	while ((opt = getopt(argc, argv, "t:m:n:d:w:i:lh")) != -1) {
		switch (opt) {
		case 't':
			name = optarg;
			break;
		case 'm':
			if (strcmp(optarg, "thread") && strcmp(optarg, "process"))
				usage("-m must be thread or process");
			process_mode = !strcmp(optarg, "process");
			break;
		case 'n': {
			char *end;

			requested = strtol(optarg, &end, 10);
			if (*end || requested < 1 || requested > MAX_TASKS)
				usage("-n must be a number of tasks from 1 to 4096");
			break;
		}
		case 'd':
			duration = parse_seconds(optarg, "-d must be a positive number of seconds", 1e-3);
			break;
		case 'w':
			warmup = parse_seconds(optarg, "-w must be a number of seconds >= 0", 0);
			break;
		case 'i':
			interval = parse_seconds(optarg, "-i must be a positive number of seconds", 1e-3);
			break;
		case 'l':
			for (size_t i = 0; i < sizeof(testcases) / sizeof(testcases[0]); i++)
				printf("%s\t%s\n", testcases[i].name, testcases[i].description);
			return 0;
		default:
			usage("unknown option");
		}
	}
	if (optind < argc)
		usage("unexpected argument");
	if (!name)
		usage("-t TESTCASE is required (wis -l lists them)");
	for (size_t i = 0; i < sizeof(testcases) / sizeof(testcases[0]); i++)
		if (!strcmp(testcases[i].name, name))
			testcase = &testcases[i];
	if (!testcase)
		usage("unknown testcase (wis -l lists them)");
	if (getenv("TMPDIR") && *getenv("TMPDIR"))
		tmpdir = getenv("TMPDIR");

	/* poll2 holds 128 files per task; in thread mode they share one table */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
		die("sched_getaffinity: %s", strerror(errno));
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &allowed))
			cpus[nr_cpus++] = cpu;

	nr_tasks = requested;
	counters = mmap(NULL, nr_tasks * sizeof(*counters) + nr_tasks * sizeof(*statuses),
			PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	tasks = calloc(nr_tasks, sizeof(*tasks));
	prev = calloc(nr_tasks, sizeof(*prev));
	base = calloc(nr_tasks, sizeof(*base));
	if (counters == MAP_FAILED || !tasks || !prev || !base)
		die("out of memory for %u tasks", nr_tasks);
	statuses = (struct status *)(counters + nr_tasks);
	for (unsigned i = 0; i < nr_tasks; i++)
		tasks[i] = (struct task){ .cpu = cpus[i % nr_cpus],
					  .ops = &counters[i].ops, .status = &statuses[i] };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (pipe(start_pipe) < 0)
		die("pipe: %s", strerror(errno));
	start_fd = start_pipe[0];
	fflush(stdout);    /* forked tasks must not inherit buffered output */
	for (; nr_started < nr_tasks; nr_started++)
		start_task(&tasks[nr_started], start_pipe[1]);
	for (unsigned i = 0; i < nr_tasks; i++) {
		while (__atomic_load_n(&tasks[i].status->state, __ATOMIC_ACQUIRE) != READY) {
			check_tasks();
			usleep(1000);
		}
	}

	printf("wis testcase=%s mode=%s tasks=%u warmup_s=%g duration_s=%g interval_s=%g cpus=",
	       testcase->name, process_mode ? "process" : "thread", nr_tasks, warmup, duration,
	       interval);
	for (unsigned i = 0; i < nr_tasks; i++)
		printf("%s%d", i ? "," : "", tasks[i].cpu);
	printf("\n");

	close(start_pipe[1]);    /* EOF on start_fd: every task starts at once */
	double begin = now(), mark = begin + warmup, end = mark + duration, last, measured;
	uint64_t ops;

	sleep_until(mark);
	check_tasks();
	ops = sample(prev, &min, &max);
	last = now();
	if (warmup > 0)
		printf("warmup elapsed_s=%.6f ops_per_s=%.0f\n", last - begin, ops / (last - begin));
	memcpy(base, prev, nr_tasks * sizeof(*base));
	measured = last;
	for (unsigned n = 1; last < end; n++) {
		double when = mark + n * interval, t;

		sleep_until(when < end ? when : end);
		check_tasks();
		ops = sample(prev, &min, &max);
		t = now();
		printf("interval n=%u elapsed_s=%.6f ops_per_s=%.0f min_task_ops_per_s=%.0f "
		       "max_task_ops_per_s=%.0f\n", n, t - last, ops / (t - last),
		       min / (t - last), max / (t - last));
		total += ops;
		last = t;
	}
	measured = last - measured;
	stop_tasks();
	for (unsigned i = 0; i < nr_tasks; i++) {
		uint64_t done = prev[i] - base[i];

		if (done == 0)
			die("%s: task %u made no progress in %.3f s", testcase->name, i, measured);
		least = done < least ? done : least;
		most = done > most ? done : most;
	}
	printf("result total_ops_per_s=%.0f per_task_ops_per_s=%.0f min_task_ops_per_s=%.0f "
	       "max_task_ops_per_s=%.0f measured_s=%.6f\n", total / measured,
	       total / measured / nr_tasks, least / measured, most / measured, measured);
	return 0;
}
