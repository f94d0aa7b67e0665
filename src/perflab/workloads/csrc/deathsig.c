/* perflab's exec shim for samples run without cgroups: the sample's process dies with
 * perflab. Usage: deathsig PARENT_PID STAMP_FD PROGRAM ARGV0 [ARGS...]
 *
 * It asks the kernel for SIGKILL when its parent (the perflab thread that spawned it)
 * dies, checks that perflab did not die before that took hold, writes CLOCK_MONOTONIC
 * (a double) to STAMP_FD just before it execs PROGRAM, so perflab's clock starts at the
 * command's exec and not at this shim's. STAMP_FD is close-on-exec: the command never
 * sees it; if the exec fails, the errno (an int) follows the stamp and it exits 127.
 * The death signal survives exec, except into a set-user-ID or set-group-ID program.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 5)
        return 127;
    pid_t parent = (pid_t)atol(argv[1]);
    int fd = atoi(argv[2]);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        return 127;   /* no guard, or perflab is gone already */
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double stamp = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
    if (write(fd, &stamp, sizeof stamp) != (ssize_t)sizeof stamp)
        return 127;
    execv(argv[3], argv + 4);
    int error = errno;
    (void)!write(fd, &error, sizeof error);
    return 127;
}
