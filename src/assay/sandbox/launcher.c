/* assay-launch: a parked exec launcher, compiled by assay/sandbox/native.py when a C compiler
 * is here (otherwise /bin/sh + nsenter + unshare do the same work in four program starts).
 *
 * Started by the harness (vfork) with its output pipes; blocks reading a request from the
 * pipe on fd argv[1] until the harness has written it and closed its end (a harness that dies
 * closes it too: an empty request ends the launcher). The harness meanwhile moved this
 * process into the sandbox's control group and set its rlimits, so everything below is
 * bounded from its first instruction.
 *
 * Request: NUL-terminated strings
 *   "assay-launch-1" MODE STDIN_NULL [enter fields] NENV ENV... NARGV ARGV...
 *   MODE "exec":  execvp ARGV with exactly ENV (the sandbox's bwrap)
 *   MODE "enter": fields INIT_PID CWD SETUID USERNS CGROUP INSIDE_UID; like
 *     nsenter --target=INIT_PID [--user=USERNS --preserve-credentials] [--cgroup] --ipc --uts
 *             --net --pid --mount --root --wdns=CWD [--setuid=SETUID --setgid=SETUID] --
 *     unshare --map-user=INSIDE_UID --map-group=INSIDE_UID -- ARGV
 *     (SETUID and USERNS are "-" when unused, CGROUP "0" or "1"); the parent stays outside
 *     the pid namespace, waits for the command and exits as it did (a signal included).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void die(const char *what) {
    dprintf(2, "assay-launch: %s: %s\n", what, strerror(errno));
    _exit(127);
}

static void fail(const char *what) {
    dprintf(2, "assay-launch: %s\n", what);
    _exit(127);
}

static char *buf;
static size_t len, pos;

static const char *next(void) {
    if (pos >= len)
        fail("truncated request");
    char *s = buf + pos;
    char *end = memchr(s, '\0', len - pos);
    if (end == NULL)
        fail("truncated request");
    pos = (size_t)(end - buf) + 1;
    return s;
}

static long number(const char *s) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *s == '\0' || *end != '\0' || v < 0)
        fail("bad number in request");
    return v;
}

static char **strings(long n) {
    if (n > 1 << 20)
        fail("bad count in request");
    char **v = calloc((size_t)n + 1, sizeof(char *));
    if (v == NULL)
        die("calloc");
    for (long i = 0; i < n; i++)
        v[i] = (char *)next();
    return v;
}

static void write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        die(path);
    ssize_t n = write(fd, text, strlen(text));
    if (n != (ssize_t)strlen(text))
        die(path);
    close(fd);
}

static int ns_fd(const char *pid, const char *name) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%s/%s", pid, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die(path);
    return fd;
}

/* the parent: wait for the command, exit as it did (nsenter's continue_as_child) */
static void wait_as_parent(pid_t child) {
    int status;
    for (;;) {
        pid_t r = waitpid(child, &status, WUNTRACED);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == child && WIFSTOPPED(status)) {
            kill(getpid(), SIGSTOP);
            kill(child, SIGCONT);
            continue;
        }
        break;
    }
    if (WIFEXITED(status))
        _exit(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        kill(getpid(), WTERMSIG(status));
    }
    _exit(1);
}

static void enter(const char *pid, const char *cwd, const char *setuid_to, const char *userns,
                  int cgroup, const char *inside) {
    static const char *const order[] = {"ns/cgroup", "ns/ipc", "ns/uts", "ns/net", "ns/pid", "ns/mnt"};
    int fds[6], user = -1;
    /* every namespace and the root are opened before any is entered (they are /proc paths of the host) */
    if (strcmp(userns, "-") != 0) {
        user = open(userns, O_RDONLY | O_CLOEXEC);
        if (user < 0)
            die(userns);
    }
    for (int i = 0; i < 6; i++)
        fds[i] = (i == 0 && !cgroup) ? -1 : ns_fd(pid, order[i]);
    int root = ns_fd(pid, "root");
    if (user >= 0 && setns(user, CLONE_NEWUSER) < 0)
        die("setns user");
    for (int i = 0; i < 6; i++)
        if (fds[i] >= 0 && setns(fds[i], 0) < 0)
            die(order[i]);
    if (fchdir(root) < 0 || chroot(".") < 0)
        die("chroot");
    if (chdir(cwd) < 0)
        die(cwd);
    pid_t child = fork(); /* the pid namespace applies to children only */
    if (child < 0)
        die("fork");
    if (child > 0)
        wait_as_parent(child); /* as nsenter's: stays outside, with the harness's credentials */
    if (strcmp(setuid_to, "-") != 0) {
        uid_t id = (uid_t)number(setuid_to);
        if (setgroups(0, NULL) < 0 || setgid(id) < 0 || setuid(id) < 0)
            die("setuid");
        /* a uid change made us non-dumpable, so /proc/self is root's and the maps below could
         * not be written; unshare(1) starts dumpable too (a fresh exec), so nothing changes */
        if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
            die("prctl");
    }
    /* the child: a user namespace of its own mapping its uid and gid to the inside one */
    char map[64];
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER) < 0)
        die("unshare user");
    write_file("/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "%s %u 1", inside, (unsigned)uid);
    write_file("/proc/self/uid_map", map);
    snprintf(map, sizeof map, "%s %u 1", inside, (unsigned)gid);
    write_file("/proc/self/gid_map", map);
}

int main(int argc, char **argv) {
    if (argc != 2)
        fail("usage: assay-launch REQUEST_FD");
    int in = (int)number(argv[1]);
    size_t cap = 1 << 16;
    buf = malloc(cap);
    if (buf == NULL)
        die("malloc");
    for (;;) {
        if (len == cap) {
            cap *= 2;
            if (cap > (64u << 20) || (buf = realloc(buf, cap)) == NULL)
                fail("request too large");
        }
        ssize_t n = read(in, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die("read request");
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(in);
    if (len == 0)
        _exit(0); /* not used: ended by the harness (or the harness died) */
    if (strcmp(next(), "assay-launch-1") != 0)
        fail("unknown request version");
    const char *mode = next();
    int stdin_null = strcmp(next(), "1") == 0;
    const char *pid = NULL, *cwd = NULL, *setuid_to = NULL, *userns = NULL, *inside = NULL;
    int cgroup = 0;
    if (strcmp(mode, "enter") == 0) {
        pid = next();
        cwd = next();
        setuid_to = next();
        userns = next();
        cgroup = strcmp(next(), "1") == 0;
        inside = next();
        number(pid);
        number(inside);
    } else if (strcmp(mode, "exec") != 0) {
        fail("unknown mode");
    }
    char **env = strings(number(next()));
    char **args = strings(number(next()));
    if (args[0] == NULL)
        fail("empty command");
    if (stdin_null) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0 || dup2(fd, 0) < 0)
            die("/dev/null");
        if (fd != 0)
            close(fd);
    }
    if (pid != NULL)
        enter(pid, cwd, setuid_to, userns, cgroup, inside);
    environ = env;
    execvp(args[0], args);
    int err = errno;
    dprintf(2, "assay-launch: cannot run %s: %s\n", args[0], strerror(err));
    _exit(err == ENOENT ? 127 : 126);
}
