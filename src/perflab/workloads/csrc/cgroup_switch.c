/*
 * cgroup_switch: the cost of a context switch between processes in different cgroups
 * while perf events are open on those cgroups (the benchmark of Ian Rogers' "Optimize
 * cgroup context switch" series, perflab seed 001).
 *
 * Two processes ping-pong one byte over two pipes, both pinned to one CPU, so every
 * read that blocks hands the CPU to the other.  They go into cgroups 0 and 1 mod N:
 * with N >= 2 they are in different cgroups and every switch crosses cgroups; the
 * other cgroups stay empty but carry events too, as in the seed's 208 cgroups.
 * M perf events (a software event, counting on that CPU) are opened on every cgroup
 * (monitor=all) or on the first (monitor=one).
 * The kernel's own count of the switches (getrusage of each process around its
 * loop) is printed beside the count the design implies, for perflab to compare.
 *
 * The cgroups live in <hierarchy>/perflab-cgroup-switch.<pid>/ (on cgroup2 below
 * our own cgroup: <hierarchy>/<ours>/perflab-cgroup-switch.<pid>/) and are always
 * removed: at exit, on error, on SIGINT/SIGTERM/SIGHUP, and, when this program is
 * SIGKILLed, by a janitor process in a session of its own that waits for it to
 * die.  Leftovers of dead owners (a janitor killed too) are swept at start.
 *
 * Usage: cgroup_switch [-g CGROUPS] [-e EVENTS] [-m one|all] [-E EVENT] [-l LOOPS]
 *                      [-c CPU]
 *        cgroup_switch --check    (exit 0 if cgroup perf events work here)
 * The environment variable PERFLAB_CGROUP_SWITCH_EXPECT_FACTOR multiplies the
 * expected switch count: a test hook that proves a mismatch is reported.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OWNER_PREFIX "perflab-cgroup-switch."
#define MAX_CGROUPS 4096
#define ROOT_MAX 1024              /* a hierarchy's mount point (and our cgroup in it) */
#define OWNER_MAX (ROOT_MAX + 64)
#define CGROUP_MAX (OWNER_MAX + 32) /* owner/g<N> */
#define PATH_LEN (OWNER_MAX + 320)  /* any file below the owner directory */
#define RMDIR_TRIES 500          /* x 10 ms: killed tasks take a moment to leave */

struct child_result {
	double start, end;
	long switches;
	char error[200];
};

static const struct {
	const char *name;
	unsigned long long config;
} events_known[] = {
	{ "cpu-clock", PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_COUNT_SW_TASK_CLOCK },
	{ "context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES },
};

static char owner[OWNER_MAX];           /* our cgroup directory, once created */
static pid_t children[2];
static int nr_children;
static int *event_fds;
static int nr_events;

/* Kill every process in the cgroup ``dir`` (v1 and v2 both list them in cgroup.procs). */
static void kill_members(const char *dir)
{
	char path[PATH_LEN];
	FILE *f;
	int pid;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fscanf(f, "%d", &pid) == 1)
		kill(pid, SIGKILL);
	fclose(f);
}

static int remove_cgroup(const char *dir)
{
	for (int i = 0; i < RMDIR_TRIES; i++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -1;
		kill_members(dir);
		usleep(10000);
	}
	return -1;
}

/* Remove an owner directory and the cgroups inside it; 0 when gone. */
static int remove_tree(const char *dir)
{
	char path[PATH_LEN];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return errno == ENOENT ? 0 : -1;
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		kill_members(path);
		remove_cgroup(path);
	}
	closedir(d);
	return remove_cgroup(dir);
}

static void cleanup(void)
{
	for (int i = 0; i < nr_children; i++) {
		kill(children[i], SIGKILL);
		waitpid(children[i], NULL, 0);
	}
	nr_children = 0;
	for (int i = 0; i < nr_events; i++)
		close(event_fds[i]);
	nr_events = 0;
	if (owner[0] && remove_tree(owner) < 0)
		fprintf(stderr, "cgroup_switch: warning: cannot remove %s: %s\n", owner,
			strerror(errno));
	owner[0] = '\0';
}

__attribute__((noreturn, format(printf, 1, 2)))
static void die(const char *fmt, ...)
{
	char message[1024];
	va_list ap;

	/* format first: the arguments may name the directories cleanup() removes */
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	cleanup();
	fprintf(stderr, "cgroup_switch: %s\n", message);
	exit(1);
}

__attribute__((noreturn))
static void usage(const char *why)
{
	fprintf(stderr, "cgroup_switch: %s\nusage: cgroup_switch [-g CGROUPS] [-e EVENTS] "
		"[-m one|all] [-E cpu-clock|task-clock|context-switches] [-l LOOPS] "
		"[-c CPU]\n       cgroup_switch --check\n", why);
	exit(2);
}

static long parse_long(const char *text, long minimum, long maximum, const char *why)
{
	char *end;
	long value = strtol(text, &end, 10);

	if (*text == '\0' || *end != '\0' || value < minimum || value > maximum)
		usage(why);
	return value;
}

static const char *hint(int err)
{
	return err == EACCES || err == EPERM ? " (run as root)" : "";
}

/*
 * On cgroup2, our own cgroup (from /proc/self/cgroup) inside the hierarchy: our cgroups
 * go below it, so whoever placed us in a cgroup (perflab, a sample's own cgroup) kills
 * and removes ours with it.
 */
static void append_own_cgroup(char *root, size_t size)
{
	char line[4096];
	FILE *f = fopen("/proc/self/cgroup", "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::/", 4))
			continue;
		line[strcspn(line, "\n")] = 0;
		if (line[4] && strlen(root) + strlen(line + 3) < size)
			strcat(root, line + 3);
		break;
	}
	fclose(f);
}

/*
 * The hierarchy where cgroup perf events work: the v1 hierarchy that carries the
 * perf_event controller if one is mounted, otherwise cgroup2 (where perf_event is
 * implicit), below our own cgroup there.
 */
static void find_hierarchy(char *root, size_t size, int *version)
{
	char line[4096], mountpoint[ROOT_MAX], fstype[64], options[1024];
	FILE *f = fopen("/proc/self/mountinfo", "r");

	*version = 0;
	if (!f)
		die("cannot read /proc/self/mountinfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %*s %*s %255s", mountpoint) != 1 ||
		    sscanf(sep + 3, "%63s %*s %1023s", fstype, options) != 2)
			continue;
		if (!strcmp(fstype, "cgroup")) {
			char *tok, *save;

			for (tok = strtok_r(options, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
				if (!strcmp(tok, "perf_event")) {
					snprintf(root, size, "%s", mountpoint);
					*version = 1;
				}
		} else if (!strcmp(fstype, "cgroup2") && *version == 0) {
			snprintf(root, size, "%s", mountpoint);
			*version = 2;
		}
		if (*version == 1)
			break;
	}
	fclose(f);
	if (!*version)
		die("no cgroup hierarchy with the perf_event controller is mounted "
		    "(mount cgroup2, or a cgroup v1 hierarchy with -o perf_event)");
	if (*version == 2)
		append_own_cgroup(root, size);
}

static int owner_alive(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

/* Remove what earlier runs left when both they and their janitor were killed. */
static void sweep_stale(const char *root)
{
	char path[PATH_LEN];
	struct dirent *e;
	DIR *d = opendir(root);

	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t len = strlen(OWNER_PREFIX);
		pid_t pid;

		if (strncmp(e->d_name, OWNER_PREFIX, len))
			continue;
		pid = atoi(e->d_name + len);
		if (pid > 0 && owner_alive(pid))
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, e->d_name);
		remove_tree(path);
	}
	closedir(d);
}

/*
 * A process outside our process group and session that removes our cgroups once we
 * are gone, however we died: perflab kills a timed-out sample's whole group with
 * SIGKILL, which no handler of ours can catch.
 */
static void start_janitor(void)
{
	pid_t parent = getpid(), pid = fork();
	struct pollfd pfd = { .events = POLLIN };
	int null;

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid > 0)
		return;
	setsid();
	null = open("/dev/null", O_RDWR);
	for (int fd = 0; fd < 3; fd++)
		dup2(null, fd);
	/* hold no one's pipes: whoever reads our output must not wait for the janitor */
	syscall(SYS_close_range, 3, ~0U, 0);
	pfd.fd = syscall(SYS_pidfd_open, parent, 0);
	if (pfd.fd >= 0)
		while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
			;
	remove_tree(owner);
	_exit(0);
}

static void make_cgroup(const char *path)
{
	if (mkdir(path, 0755) < 0)
		die("cannot create cgroup %s: %s%s", path, strerror(errno), hint(errno));
}

static void open_event(int cgroup_fd, const char *cgroup, int cpu, unsigned long long config,
		       const char *event)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = config,
	};
	int fd = syscall(SYS_perf_event_open, &attr, cgroup_fd, cpu, -1,
			 PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		die("perf_event_open(%s, cgroup %s, cpu %d): %s%s", event, cgroup, cpu,
		    strerror(errno), errno == EACCES ? " (run as root or lower "
		    "kernel.perf_event_paranoid)" : "");
	event_fds[nr_events++] = fd;
}

static void place(pid_t pid, const char *cgroup)
{
	char path[PATH_LEN];
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
	fd = open(path, O_WRONLY);
	if (fd < 0 || dprintf(fd, "%d\n", pid) < 0)
		die("cannot move pid %d into %s: %s%s", pid, cgroup, strerror(errno), hint(errno));
	close(fd);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long switches(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

__attribute__((noreturn))
static void child(struct child_result *r, int cpu, int initiator, int in, int out,
		  int start_fd, long loops)
{
	cpu_set_t mask;
	char c = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	CPU_ZERO(&mask);
	CPU_SET(cpu, &mask);
	if (sched_setaffinity(0, sizeof(mask), &mask) < 0) {
		snprintf(r->error, sizeof(r->error), "cannot pin to CPU %d: %s", cpu,
			 strerror(errno));
		_exit(1);
	}
	while (read(start_fd, &c, 1) < 0 && errno == EINTR)
		;
	r->switches = -switches();
	r->start = now();
	for (long i = 0; i < loops; i++) {
		errno = 0;
		if ((initiator && write(out, &c, 1) != 1) || read(in, &c, 1) != 1 ||
		    (!initiator && write(out, &c, 1) != 1)) {
			snprintf(r->error, sizeof(r->error), "pipe ping-pong stopped: %s",
				 errno ? strerror(errno) : "the partner exited");
			_exit(1);
		}
	}
	r->end = now();
	r->switches += switches();
	_exit(0);
}

static int first_allowed_cpu(const cpu_set_t *allowed)
{
	int cpu = 0;

	while (!CPU_ISSET(cpu, allowed))
		cpu++;
	return cpu;
}

static void check_mode(void)
{
	char root[ROOT_MAX], cgroup[CGROUP_MAX];
	int version, fd;
	cpu_set_t allowed;

	find_hierarchy(root, sizeof(root), &version);
	sweep_stale(root);
	snprintf(owner, sizeof(owner), "%s/%s%d", root, OWNER_PREFIX, getpid());
	start_janitor();
	make_cgroup(owner);
	snprintf(cgroup, sizeof(cgroup), "%s/g0", owner);
	make_cgroup(cgroup);
	fd = open(cgroup, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		die("cannot open %s: %s", cgroup, strerror(errno));
	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
		die("sched_getaffinity: %s", strerror(errno));
	event_fds = calloc(1, sizeof(int));
	open_event(fd, cgroup, first_allowed_cpu(&allowed), PERF_COUNT_SW_CPU_CLOCK, "cpu-clock");
	close(fd);
	cleanup();
	printf("ok hierarchy=%s version=%d\n", root, version);
}

int main(int argc, char **argv)
{
	static const struct option long_options[] = { { "check", no_argument, NULL, 'k' }, { 0 } };
	long cgroups = 2, events = 0, loops = 20000, cpu = -1;
	int monitor_all = 1, opt, version, start[2], pipes[2][2], sigfd;
	const char *event = "cpu-clock", *factor_text;
	unsigned long long config = PERF_COUNT_SW_CPU_CLOCK;
	double factor = 1, first_start, last_end, elapsed;
	char root[ROOT_MAX];
	cpu_set_t allowed;
	struct rlimit rl;
	struct child_result *results;
	sigset_t signals;
	long measured, expected;

	while ((opt = getopt_long(argc, argv, "g:e:m:E:l:c:", long_options, NULL)) != -1) {
		switch (opt) {
		case 'k':
			check_mode();
			return 0;
		case 'g':
			cgroups = parse_long(optarg, 1, MAX_CGROUPS, "-g CGROUPS must be 1 to 4096");
			break;
		case 'e':
			events = parse_long(optarg, 0, 1000, "-e EVENTS must be 0 to 1000");
			break;
		case 'm':
			if (strcmp(optarg, "one") && strcmp(optarg, "all"))
				usage("-m must be one or all");
			monitor_all = !strcmp(optarg, "all");
			break;
		case 'E': {
			size_t i, n = sizeof(events_known) / sizeof(events_known[0]);

			for (i = 0; i < n && strcmp(optarg, events_known[i].name); i++)
				;
			if (i == n)
				usage("-E must be cpu-clock, task-clock or context-switches");
			event = events_known[i].name;
			config = events_known[i].config;
			break;
		}
		case 'l':
			loops = parse_long(optarg, 1, 1000000000L, "-l LOOPS must be positive");
			break;
		case 'c':
			cpu = parse_long(optarg, 0, CPU_SETSIZE - 1, "-c CPU must be a CPU number");
			break;
		default:
			usage("unknown option");
		}
	}
	if (optind < argc)
		usage("unexpected argument");
	factor_text = getenv("PERFLAB_CGROUP_SWITCH_EXPECT_FACTOR");
	if (factor_text && *factor_text) {
		char *end;

		factor = strtod(factor_text, &end);
		if (*end || !(factor > 0))
			usage("PERFLAB_CGROUP_SWITCH_EXPECT_FACTOR must be a positive number");
	}
	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
		die("sched_getaffinity: %s", strerror(errno));
	if (cpu < 0)
		cpu = first_allowed_cpu(&allowed);
	else if (!CPU_ISSET(cpu, &allowed))
		usage("-c CPU is not one this process may run on");

	/* one descriptor per event: N x M can exceed the default soft limit */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	results = mmap(NULL, 2 * sizeof(*results), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	event_fds = calloc(cgroups * events + 1, sizeof(int));
	if (results == MAP_FAILED || !event_fds)
		die("out of memory");

	find_hierarchy(root, sizeof(root), &version);
	sweep_stale(root);
	snprintf(owner, sizeof(owner), "%s/%s%d", root, OWNER_PREFIX, getpid());
	start_janitor();
	/*
	 * Read from a signalfd in the wait below, not caught: a signal that arrives
	 * during setup stays pending instead of racing with a blocking wait.
	 */
	sigemptyset(&signals);
	sigaddset(&signals, SIGINT);
	sigaddset(&signals, SIGTERM);
	sigaddset(&signals, SIGHUP);
	sigaddset(&signals, SIGCHLD);
	sigprocmask(SIG_BLOCK, &signals, NULL);
	sigfd = signalfd(-1, &signals, SFD_CLOEXEC);
	if (sigfd < 0)
		die("signalfd: %s", strerror(errno));
	make_cgroup(owner);
	for (long g = 0; g < cgroups; g++) {
		char cgroup[CGROUP_MAX];
		int fd;

		snprintf(cgroup, sizeof(cgroup), "%s/g%ld", owner, g);
		make_cgroup(cgroup);
		if (events == 0 || (!monitor_all && g > 0))
			continue;
		fd = open(cgroup, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			die("cannot open %s: %s", cgroup, strerror(errno));
		for (long e = 0; e < events; e++)
			open_event(fd, cgroup, cpu, config, event);
		close(fd);
	}

	if (pipe(start) < 0)
		die("pipe: %s", strerror(errno));
	/* pipes[0] carries A -> B, pipes[1] B -> A */
	if (pipe(pipes[0]) < 0 || pipe(pipes[1]) < 0)
		die("pipe: %s", strerror(errno));
	for (int i = 0; i < 2; i++) {
		char cgroup[CGROUP_MAX];
		pid_t pid = fork();

		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			/* only our two ends stay open, so a dead partner reads as EOF */
			close(pipes[i][0]);
			close(pipes[!i][1]);
			close(start[1]);
			close(sigfd);
			sigprocmask(SIG_UNBLOCK, &signals, NULL);
			child(&results[i], cpu, i == 0, pipes[!i][0], pipes[i][1], start[0], loops);
		}
		children[nr_children++] = pid;
		snprintf(cgroup, sizeof(cgroup), "%s/g%ld", owner, i % cgroups);
		place(pid, cgroup);
	}
	for (int i = 0; i < 2; i++) {
		close(pipes[i][0]);
		close(pipes[i][1]);
	}
	printf("cgroup_switch hierarchy=%s version=%d cgroups=%ld events=%ld monitor=%s "
	       "event=%s loops=%ld cpu=%ld events_opened=%d\n", root, version, cgroups, events,
	       monitor_all ? "all" : "one", event, loops, cpu, nr_events);
	close(start[1]);    /* EOF: every process starts at once */

	for (int left = nr_children; left > 0;) {
		struct signalfd_siginfo si;
		int status;
		pid_t pid;

		if (read(sigfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo != SIGCHLD)
			die("interrupted by SIG%s", sigabbrev_np(si.ssi_signo));
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			for (int i = 0; i < nr_children; i++) {
				if (children[i] != pid)
					continue;
				left--;
				if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
					die("process %d of the ping-pong failed: %s", i,
					    results[i].error[0] ? results[i].error :
					    WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) :
					    "exit status");
			}
		}
	}
	nr_children = 0;
	cleanup();

	first_start = results[0].start < results[1].start ? results[0].start : results[1].start;
	last_end = results[0].end > results[1].end ? results[0].end : results[1].end;
	elapsed = last_end - first_start;
	measured = results[0].switches + results[1].switches;
	/*
	 * Each round trip hands the CPU over exactly twice: A cannot read its reply
	 * until B has run, nor B its next byte until A has; with nobody else on the
	 * CPU every switch is one of these.  Other tasks add a few.
	 */
	expected = (long)(2 * loops * factor + 0.5);
	printf("result elapsed_s=%.6f round_trips=%ld switches_expected=%ld "
	       "switches_measured=%ld expect_factor=%g usec_per_switch=%.4f\n", elapsed, loops,
	       expected, measured, factor, elapsed * 1e6 / (2.0 * loops));
	return 0;
}
