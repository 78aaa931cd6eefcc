/* assay-launch: a parked exec launcher, compiled by assay/sandbox/native.py when a C compiler
 * is here (otherwise /bin/sh + nsenter + unshare do the same work in four program starts).
 *
 * Started by the harness (vfork) with its output pipes as
 *   assay-launch REQUEST_FD [--oom-shield] [CGROUP_PROCS...]
 * it first moves itself into the sandbox's control group (writing "0" to each cgroup.procs
 * file given; a refusal ends it) and, with --oom-shield, out of the OOM killer's choice, then
 * blocks reading a request from the pipe on fd REQUEST_FD until the harness has written it
 * (a harness that dies closes the pipe: an empty request ends the launcher). The harness
 * meanwhile set its rlimits, so everything below is bounded from its first instruction.
 *
 * Request: NUL-terminated strings
 *   "assay-launch-2" LENGTH MODE STDIN_NULL [enter fields] NENV ENV... NARGV ARGV...
 *   LENGTH: the bytes after it, so the launcher starts once they are in (one wake-up: it does
 *   not wait for the harness to close the pipe)
 *   MODE "exec":  execvp ARGV with exactly ENV (the sandbox's bwrap)
 *   MODE "enter": fields INIT_PID CWD SETUID USERNS CGROUP INSIDE_UID; like
 *     nsenter --target=INIT_PID [--user=USERNS --preserve-credentials] [--cgroup] --ipc --uts
 *             --net --pid --mount --root --wdns=CWD [--setuid=SETUID --setgid=SETUID] --
 *     unshare --map-user=INSIDE_UID --map-group=INSIDE_UID -- ARGV
 *     (SETUID and USERNS are "-" when unused, CGROUP "0" or "1"); the parent stays outside
 *     the pid namespace, waits for the command and exits as it did (a signal included).
 * "assay-launch hold": what holds a sandbox's namespaces as its pid 1, as bwrap's init and `cat`
 *   did together: reaps whatever is orphaned inside (SIGCHLD ignored), copies stdin to stdout
 *   (the harness's "ready") until stdin closes.
 *
 * Built freestanding on x86-64 (no C library: a program start then costs about a quarter of a
 * static glibc one on a VM, where glibc's start-up probing traps to the hypervisor); elsewhere
 * with the C library, the same code through syscall(2).
 */
#if defined(ASSAY_FREESTANDING) && defined(__x86_64__)
#include <asm/unistd.h>
#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/mman.h>
#include <linux/prctl.h>
#include <linux/sched.h>
#include <linux/signal.h>

static long sc(long n, long a, long b, long c, long d, long e, long f) {
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

__asm__(".text\n.globl _start\n_start:\n xor %rbp,%rbp\n mov %rsp,%rdi\n and $-16,%rsp\n call start_c\n hlt\n");

void *memset(void *d, int c, unsigned long n) {
    unsigned char *p = d;
    while (n--)
        *p++ = (unsigned char)c;
    return d;
}

void *memcpy(void *d, const void *s, unsigned long n) {
    unsigned char *p = d;
    const unsigned char *q = s;
    while (n--)
        *p++ = *q++;
    return d;
}
#else
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static long sc(long n, long a, long b, long c, long d, long e, long f) {
    long r = syscall(n, a, b, c, d, e, f);
    return r < 0 ? -errno : r;
}
#endif

#define S1(n, a) sc(n, (long)(a), 0, 0, 0, 0, 0)
#define S2(n, a, b) sc(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define S3(n, a, b, c) sc(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define S4(n, a, b, c, d) sc(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define AT_CWD (-100)
#define WAIT_UNTRACED 2
#define SIG_KILL_DFL 0

static unsigned long slen(const char *s) {
    unsigned long n = 0;
    while (s[n])
        n++;
    return n;
}

static int same(const char *a, const char *b) {
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

static void put(const char *s) {
    (void)S3(__NR_write, 2, s, slen(s));
}

static void put_num(unsigned long v) {
    char d[24];
    int i = 23;
    d[i] = '\0';
    do
        d[--i] = (char)('0' + v % 10);
    while ((v /= 10) && i > 0);
    put(d + i);
}

static __attribute__((noreturn)) void leave(int code) {
    for (;;)
        (void)S1(__NR_exit_group, code);
}

/* the error and the errno number (no C library: no strerror); 127 like a missing command */
static __attribute__((noreturn)) void die(const char *what, long err) {
    put("assay-launch: ");
    put(what);
    if (err < 0) {
        put(": errno ");
        put_num((unsigned long)-err);
    }
    put("\n");
    leave(127);
}

static char *buf;
static unsigned long len, pos;

static const char *next(void) {
    unsigned long i = pos;
    while (i < len && buf[i])
        i++;
    if (i >= len)
        die("truncated request", 0);
    const char *s = buf + pos;
    pos = i + 1;
    return s;
}

static long number(const char *s) {
    long v = 0;
    if (!*s)
        die("bad number in request", 0);
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (1L << 40))
            die("bad number in request", 0);
        v = v * 10 + (*s - '0');
    }
    return v;
}

static void *grab(unsigned long size) {
    long p = sc(__NR_mmap, 0, (long)size, 0x1 | 0x2 /* PROT_READ|WRITE */, 0x02 | 0x20 | 0x4000 /* PRIVATE|ANON|NORESERVE */, -1, 0);
    if (p < 0 && p > -4096)
        die("mmap", p);
    return (void *)p;
}

static char **strings(long n) {
    if (n > (1L << 20))
        die("bad count in request", 0);
    char **v = grab(((unsigned long)n + 1) * sizeof(char *));
    for (long i = 0; i < n; i++)
        v[i] = (char *)next();
    v[n] = 0;
    return v;
}

static void write_file(const char *path, const char *text) {
    long fd = S4(__NR_openat, AT_CWD, path, O_WRONLY | O_CLOEXEC, 0);
    if (fd < 0)
        die(path, fd);
    long n = S3(__NR_write, fd, text, slen(text));
    if (n != (long)slen(text))
        die(path, n < 0 ? n : -5);
    (void)S1(__NR_close, fd);
}

static char *join(char *out, const char *a, const char *b, const char *c) {
    char *p = out;
    for (const char *s = a; *s; s++)
        *p++ = *s;
    for (const char *s = b; *s; s++)
        *p++ = *s;
    for (const char *s = c; *s; s++)
        *p++ = *s;
    *p = '\0';
    return out;
}

static long open_ns(const char *pid, const char *name) {
    char path[96];
    if (slen(pid) > 20)
        die("bad pid in request", 0);
    long fd = S4(__NR_openat, AT_CWD, join(path, "/proc/", pid, name), O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        die(path, fd);
    return fd;
}

static void map_line(char *out, const char *inside, unsigned long outer) {
    char d[24];
    int i = 23;
    d[i] = '\0';
    do
        d[--i] = (char)('0' + outer % 10);
    while ((outer /= 10) && i > 0);
    join(out, inside, " ", d + i);
    join(out + slen(out), " 1", "", "");
}

/* the parent: wait for the command, exit as it did (nsenter's continue_as_child) */
static __attribute__((noreturn)) void wait_as_parent(long child) {
    int status = 0;
    for (;;) {
        long r = S4(__NR_wait4, child, &status, WAIT_UNTRACED, 0);
        if (r == -EINTR)
            continue;
        if (r == child && (status & 0xff) == 0x7f) { /* stopped: stop too, then go on */
            (void)S2(__NR_kill, S1(__NR_getpid, 0), SIGSTOP);
            (void)S2(__NR_kill, child, SIGCONT);
            continue;
        }
        break;
    }
    int sig = status & 0x7f;
    if (sig == 0)
        leave((status >> 8) & 0xff);
    if (sig != 0x7f) {
        long act[4] = {SIG_KILL_DFL, 0, 0, 0}; /* the default action, as the command got */
        (void)S4(__NR_rt_sigaction, sig, act, 0, 8);
        (void)S2(__NR_kill, S1(__NR_getpid, 0), sig);
    }
    leave(1);
}

static void enter(const char *pid, const char *cwd, const char *setuid_to, const char *userns,
                  int cgroup, const char *inside) {
    static const char *const order[] = {"/ns/cgroup", "/ns/ipc", "/ns/uts", "/ns/net", "/ns/pid", "/ns/mnt"};
    long fds[6], user = -1, r;
    /* every namespace and the root are opened before any is entered (they are /proc paths of the host) */
    if (!same(userns, "-")) {
        user = S4(__NR_openat, AT_CWD, userns, O_RDONLY | O_CLOEXEC, 0);
        if (user < 0)
            die(userns, user);
    }
    for (int i = 0; i < 6; i++)
        fds[i] = (i == 0 && !cgroup) ? -1 : open_ns(pid, order[i]);
    long root = open_ns(pid, "/root");
    if (user >= 0 && (r = S2(__NR_setns, user, CLONE_NEWUSER)) < 0)
        die("setns user", r);
    for (int i = 0; i < 6; i++)
        if (fds[i] >= 0 && (r = S2(__NR_setns, fds[i], 0)) < 0)
            die(order[i], r);
    if ((r = S1(__NR_fchdir, root)) < 0 || (r = S1(__NR_chroot, ".")) < 0)
        die("chroot", r);
    if ((r = S1(__NR_chdir, cwd)) < 0)
        die(cwd, r);
    long child = sc(__NR_clone, SIGCHLD, 0, 0, 0, 0, 0); /* the pid namespace applies to children only */
    if (child < 0)
        die("fork", child);
    if (child > 0)
        wait_as_parent(child); /* as nsenter's: stays outside, with the harness's credentials */
    if (!same(setuid_to, "-")) {
        long id = number(setuid_to);
        if ((r = S2(__NR_setgroups, 0, 0)) < 0 || (r = S1(__NR_setgid, id)) < 0 || (r = S1(__NR_setuid, id)) < 0)
            die("setuid", r);
        /* a uid change made us non-dumpable, so /proc/self is root's and the maps below could
         * not be written; unshare(1) starts dumpable too (a fresh exec), so nothing changes */
        if ((r = S2(__NR_prctl, PR_SET_DUMPABLE, 1)) < 0)
            die("prctl", r);
    }
    /* a user namespace of its own, mapping its uid and gid to the inside one */
    char map[64];
    unsigned long uid = (unsigned long)S1(__NR_geteuid, 0), gid = (unsigned long)S1(__NR_getegid, 0);
    if ((r = S1(__NR_unshare, CLONE_NEWUSER)) < 0)
        die("unshare user", r);
    write_file("/proc/self/setgroups", "deny");
    map_line(map, inside, uid);
    write_file("/proc/self/uid_map", map);
    map_line(map, inside, gid);
    write_file("/proc/self/gid_map", map);
}

/* execvp with ``env``'s PATH (the default one when it has none) */
static __attribute__((noreturn)) void run(char **args, char **env) {
    const char *path = "/usr/local/bin:/usr/bin:/bin";
    long r, err = -ENOENT;
    for (char **e = env; *e; e++)
        if ((*e)[0] == 'P' && (*e)[1] == 'A' && (*e)[2] == 'T' && (*e)[3] == 'H' && (*e)[4] == '=')
            path = *e + 5;
    for (const char *s = args[0]; *s; s++)
        if (*s == '/') {
            r = S3(__NR_execve, args[0], args, env);
            die(args[0], r);
        }
    unsigned long n = slen(args[0]);
    char *full = grab(4096 + n + 2);
    while (1) {
        const char *end = path;
        while (*end && *end != ':')
            end++;
        unsigned long dl = (unsigned long)(end - path);
        if (dl < 4096) {
            char *p = full;
            for (unsigned long i = 0; i < dl; i++)
                *p++ = path[i];
            if (dl == 0)
                *p++ = '.';
            *p++ = '/';
            join(p, args[0], "", "");
            r = S3(__NR_execve, full, args, env);
            if (r == -EACCES)
                err = r;
            else if (r != -ENOENT && r != -ENOTDIR)
                die(args[0], r);
        }
        if (!*end)
            break;
        path = end + 1;
    }
    die(args[0], err);
}

static __attribute__((noreturn)) void hold(void) {
    char b[512];
    /* it is the sandbox's pid 1 (bwrap --as-pid-1: no init of bwrap's): a process orphaned
     * inside (a daemon, a command whose launcher was killed) is reparented to it, and with
     * SIGCHLD ignored the kernel reaps it at once, no zombie left */
    long ign[4] = {1 /* SIG_IGN */, 0, 0, 0};
    (void)S4(__NR_rt_sigaction, SIGCHLD, ign, 0, 8);
    for (;;) {
        long n = S3(__NR_read, 0, b, sizeof b);
        if (n == -EINTR)
            continue;
        if (n <= 0)
            leave(n == 0 ? 0 : 1);
        for (long off = 0; off < n;) {
            long w = S3(__NR_write, 1, b + off, n - off);
            if (w <= 0)
                leave(1);
            off += w;
        }
    }
}

/* what the harness asked of the parked process before its request: join the sandbox's control
 * group (each PROCS file given: "0" is the writer itself) and, with --oom-shield, leave the OOM
 * killer's choice (best effort: root with CAP_SYS_RESOURCE only). Done here, not by the harness,
 * so cgroup v1's grace-period wait on an attach blocks this process, not the harness; a refused
 * attach ends the launcher (127) before it has read, so run, anything */
static void settle_in(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        if (same(argv[i], "--oom-shield")) {
            long fd = S4(__NR_openat, AT_CWD, "/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC, 0);
            if (fd >= 0) {
                (void)S3(__NR_write, fd, "-1000", 5);
                (void)S1(__NR_close, fd);
            }
        } else {
            write_file(argv[i], "0");
        }
    }
}

static __attribute__((noreturn)) void launch(int argc, char **argv) {
    if (argc < 2)
        die("usage: assay-launch REQUEST_FD [--oom-shield] [CGROUP_PROCS...] | hold", 0);
    if (same(argv[1], "hold"))
        hold();
    long in = number(argv[1]);
    settle_in(argc, argv);
    unsigned long cap = 64UL << 20; /* reserved, not committed: pages are taken as they are read */
    unsigned long total = 0;         /* the whole request's size, once its header is in */
    buf = grab(cap);
    while (total == 0 || len < total) {
        if (len == cap)
            die("request too large", 0);
        long n = S3(__NR_read, in, buf + len, cap - len);
        if (n == -EINTR)
            continue;
        if (n < 0)
            die("read request", n);
        if (n == 0)
            break;
        len += (unsigned long)n;
        if (total == 0) { /* the header: version NUL length NUL */
            unsigned long nul = 0, i;
            for (i = 0; i < len && nul < 2; i++)
                nul += buf[i] == '\0';
            if (nul == 2) {
                pos = 0;
                if (!same(next(), "assay-launch-2"))
                    die("unknown request version", 0);
                long body = number(next());
                if ((unsigned long)body > cap - pos)
                    die("request too large", 0);
                total = pos + (unsigned long)body;
            } else if (len > 64) {
                die("unknown request version", 0);
            }
        }
    }
    (void)S1(__NR_close, in);
    if (len == 0)
        leave(0); /* not used: ended by the harness (or the harness died) */
    if (total == 0 || len < total)
        die("truncated request", 0);
    len = total;
    const char *mode = next();
    int stdin_null = same(next(), "1");
    const char *pid = 0, *cwd = 0, *setuid_to = 0, *userns = 0, *inside = 0;
    int cgroup = 0;
    if (same(mode, "enter")) {
        pid = next();
        cwd = next();
        setuid_to = next();
        userns = next();
        cgroup = same(next(), "1");
        inside = next();
        number(pid);
        number(inside);
    } else if (!same(mode, "exec")) {
        die("unknown mode", 0);
    }
    char **env = strings(number(next()));
    char **args = strings(number(next()));
    if (args[0] == 0)
        die("empty command", 0);
    if (stdin_null) {
        long fd = S4(__NR_openat, AT_CWD, "/dev/null", O_RDONLY, 0);
        long r = fd < 0 ? fd : S3(__NR_dup3, fd, 0, 0);
        if (fd == 0)
            r = 0;
        if (r < 0)
            die("/dev/null", r);
        if (fd > 0)
            (void)S1(__NR_close, fd);
    }
    if (pid != 0)
        enter(pid, cwd, setuid_to, userns, cgroup, inside);
    run(args, env);
}

#if defined(ASSAY_FREESTANDING) && defined(__x86_64__)
void __attribute__((used)) start_c(long *sp) {
    launch((int)sp[0], (char **)(sp + 1));
}
#else
int main(int argc, char **argv) {
    launch(argc, argv);
}
#endif
