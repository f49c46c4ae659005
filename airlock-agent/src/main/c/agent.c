/*
 * airlock-agent: PID 1 of every Airlock sandbox. See docs/agent-protocol.md.
 *
 * Usage: airlock-agent <unix socket path>
 *
 * The agent connects to the host's socket, says HELLO, then runs one single-threaded poll() loop
 * over the control socket, a signalfd for SIGCHLD, and the pipes of every running execution. It
 * trusts the host (the only peer) but validates every frame anyway: malformed input means the host
 * side is broken, and the safe answer is to kill everything and exit.
 *
 * It runs with exactly the privileges of the code it starts, so it holds no secrets; what it must
 * not do is let sandboxed code stall it, confuse it about which process is which, or make it write
 * through a symlink the code planted.
 *
 * When it is not PID 1 (tests run it directly on a development host) it must not kill(-1): that
 * would kill every process of the user. It then kills only the process groups it started.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum {
    T_EXEC = 1, T_STDIN = 2, T_SIGNAL = 3, T_WRITE_FILE = 4,
    T_HELLO = 10, T_STARTED = 11, T_STDOUT = 12, T_STDERR = 13, T_EXIT = 14, T_FAILED = 15, T_DONE = 16,
};

#define PROTOCOL_VERSION 1
#define MAX_FRAME (1024 * 1024 + 64)   /* largest N (type + payload) either side may send */
#define CHUNK (64 * 1024)              /* largest STDOUT/STDERR payload */
#define MAX_EXECS 64
#define MAX_STRINGS 16384              /* per string list (argv or env) */
#define MAX_STDIN_PENDING (16 * 1024 * 1024 + MAX_FRAME)
#define MAX_MESSAGE 512                /* FAILED message */
#define MAX_DRAIN (32 * CHUNK)         /* bound on the final drain of one pipe, see finish_exec */
#define MAX_TEST_GROUPS 1024

struct exec {
    int used;
    uint32_t id;
    pid_t pid;
    int out_fd, err_fd, in_fd;         /* -1 once closed */
    char *pending;                     /* stdin not yet accepted by the pipe */
    size_t pending_len, pending_off;
    int close_stdin_when_drained;
};

static struct exec execs[MAX_EXECS];
static int sock = -1;
static int is_init;                    /* getpid() == 1: we own the whole pid namespace */

/* Test mode only: every process group ever started, killed on exit (see kill_everything). */
static pid_t test_groups[MAX_TEST_GROUPS];
static int test_group_count;

/* Incoming frame: 4-byte header, then N bytes. Filled incrementally, never blocking on the host. */
static unsigned char in_frame[4 + MAX_FRAME];
static size_t in_have;

/* Parsed EXEC strings, NUL-terminated. Each needs at most its 4-byte length prefix in the frame,
 * so the frame size bounds the arena. */
static char arena[MAX_FRAME];
static char *argv_buf[MAX_STRINGS + 1];
static char *env_buf[MAX_STRINGS + 1];

static unsigned char out_frame[4 + 1 + 8 + CHUNK + MAX_MESSAGE];

/* ---------------------------------------------------------------- shutdown */

static void kill_everything(void) {
    if (is_init) {
        /* Every process in the namespace except us; our exit then ends the namespace. */
        kill(-1, SIGKILL);
        return;
    }
    for (int i = 0; i < MAX_EXECS; i++) {
        if (execs[i].used) {
            kill(-execs[i].pid, SIGKILL);
        }
    }
    /* Groups of finished execs may still hold background processes. A process group id stays
     * reserved while any member lives, so this cannot hit an unrelated group unless the id was
     * freed and reused by a new group leader, which pid wrap-around makes negligible. */
    for (int i = 0; i < test_group_count; i++) {
        kill(-test_groups[i], SIGKILL);
    }
    /* Reap them (we are their subreaper), so they do not linger as zombies of the host's init,
     * which may not reap. Bounded: a process that left our groups is not waited for. */
    for (int tries = 0; tries < 100; tries++) {
        pid_t pid;
        while ((pid = waitpid(-1, NULL, WNOHANG)) > 0) {
        }
        if (pid < 0) {
            return;                    /* ECHILD: all reaped */
        }
        usleep(10 * 1000);
    }
}

/* Ends the sandbox. An empty message is the normal end (the host hung up): exit 0 silently. */
static _Noreturn void die(const char *fmt, ...) {
    if (fmt[0] != '\0') {
        va_list ap;
        va_start(ap, fmt);
        fputs("airlock-agent: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    kill_everything();
    _exit(fmt[0] == '\0' ? 0 : 1);
}

/* ---------------------------------------------------------------- sending */

static void put_u32(unsigned char *p, uint32_t v) {
    p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}

static uint32_t get_u32(const unsigned char *p) {
    return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

/*
 * Sends out_frame with `len` payload bytes already placed at out_frame + 5. Blocking: while the
 * host is slow we stop reading pipes, so the writers block too instead of growing any buffer.
 */
static void send_frame(int type, size_t len) {
    put_u32(out_frame, (uint32_t) (len + 1));
    out_frame[4] = (unsigned char) type;
    size_t total = len + 5, sent = 0;
    while (sent < total) {
        ssize_t n = send(sock, out_frame + sent, total - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            die("");                   /* host gone: same as control socket EOF */
        }
        sent += (size_t) n;
    }
}

static void send_ids(int type, uint32_t a, uint32_t b, uint32_t c, int count) {
    uint32_t v[3] = { a, b, c };
    for (int i = 0; i < count; i++) {
        put_u32(out_frame + 5 + 4 * i, v[i]);
    }
    send_frame(type, 4 * (size_t) count);
}

static void send_failed(uint32_t id, const char *message) {
    size_t len = strnlen(message, MAX_MESSAGE);
    put_u32(out_frame + 5, id);
    put_u32(out_frame + 9, (uint32_t) len);
    memcpy(out_frame + 13, message, len);
    send_frame(T_FAILED, 8 + len);
}

/* ---------------------------------------------------------------- execs */

static struct exec *find_exec(uint32_t id) {
    for (int i = 0; i < MAX_EXECS; i++) {
        if (execs[i].used && execs[i].id == id) {
            return &execs[i];
        }
    }
    return NULL;
}

static void close_fd(int *fd) {
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static void close_stdin(struct exec *e) {
    close_fd(&e->in_fd);
    free(e->pending);
    e->pending = NULL;
    e->pending_len = e->pending_off = 0;
    e->close_stdin_when_drained = 0;
}

/* Reads one chunk from an output pipe and forwards it. Returns 0 once the pipe is done. */
static int forward_output(struct exec *e, int *fd, int type) {
    ssize_t n = read(*fd, out_frame + 9, CHUNK);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return 1;
    }
    if (n <= 0) {
        close_fd(fd);
        return 0;
    }
    put_u32(out_frame + 5, e->id);
    send_frame(type, 4 + (size_t) n);
    return 1;
}

/*
 * The main process exited: forward what it left in its pipes, then EXIT. Reading stops at
 * EAGAIN, not EOF, because a background child may keep the pipes open for ever. The bound stops a
 * background child that writes without pause from holding the exit back (a pipe holds at most
 * 1 MiB unless raised by root, so nothing the main process wrote is lost).
 */
static void finish_exec(struct exec *e, int status) {
    for (size_t drained = 0; e->out_fd >= 0 && drained < MAX_DRAIN; drained += CHUNK) {
        if (!forward_output(e, &e->out_fd, T_STDOUT) || e->out_fd < 0) break;
        struct pollfd p = { .fd = e->out_fd, .events = POLLIN };
        if (poll(&p, 1, 0) <= 0) break;
    }
    for (size_t drained = 0; e->err_fd >= 0 && drained < MAX_DRAIN; drained += CHUNK) {
        if (!forward_output(e, &e->err_fd, T_STDERR) || e->err_fd < 0) break;
        struct pollfd p = { .fd = e->err_fd, .events = POLLIN };
        if (poll(&p, 1, 0) <= 0) break;
    }
    close_fd(&e->out_fd);
    close_fd(&e->err_fd);
    close_stdin(e);
    int code, sig = 0;
    if (WIFSIGNALED(status)) {
        sig = WTERMSIG(status);
        code = 128 + sig;
    } else {
        code = WEXITSTATUS(status);
    }
    send_ids(T_EXIT, e->id, (uint32_t) code, (uint32_t) sig, 3);
    e->used = 0;
}

/* Reaps every child that has exited: our execs and any orphan reparented to us. */
static void reap_children(void) {
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) {
            return;                    /* 0: none exited yet; -1/ECHILD: no children left */
        }
        for (int i = 0; i < MAX_EXECS; i++) {
            if (execs[i].used && execs[i].pid == pid) {
                finish_exec(&execs[i], status);
                break;
            }
        }
    }
}

/* In the child, between fork and exec: report why we could not start and give up. */
static _Noreturn void child_fail(int report_fd, const char *fmt, const char *arg) {
    char message[MAX_MESSAGE];
    int n = snprintf(message, sizeof message, fmt, arg, strerror(errno));
    if (n > 0) {
        ssize_t ignored = write(report_fd, message, (size_t) n < sizeof message ? (size_t) n : sizeof message - 1);
        (void) ignored;
    }
    _exit(127);
}

static _Noreturn void child_exec(int in_r, int out_w, int err_w, int report_fd, const char *cwd) {
    setsid();
    /* dup2 clears close-on-exec on 0-2; every other descriptor the agent holds is close-on-exec. */
    if (dup2(in_r, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0) {
        child_fail(report_fd, "%s: cannot set up standard streams: %s", argv_buf[0]);
    }
    /* Make the OOM killer pick user code, never the agent. Only raising is unprivileged. */
    int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (oom >= 0) {
        ssize_t ignored = write(oom, "1000", 4);
        (void) ignored;
        close(oom);
    }
    /* Ignored signals and the blocked mask survive exec; the program must start with defaults. */
    for (int s = 1; s < NSIG; s++) {
        signal(s, SIG_DFL);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (chdir(cwd) < 0) {
        child_fail(report_fd, "cannot change directory to %s: %s", cwd);
    }
    /* execvpe looks PATH up in the caller's environment, not in envp, so install env first. */
    environ = env_buf;
    execvpe(argv_buf[0], argv_buf, env_buf);
    child_fail(report_fd, "%s: %s", argv_buf[0]);
}

static void start_exec(uint32_t id, const char *cwd) {
    struct exec *e = NULL;
    for (int i = 0; i < MAX_EXECS && e == NULL; i++) {
        if (!execs[i].used) e = &execs[i];
    }
    if (e == NULL) {
        send_failed(id, "too many processes running at once (the limit is 64)");
        return;
    }
    int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, report[2] = { -1, -1 };
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0
            || pipe2(report, O_CLOEXEC) < 0) {
        char message[MAX_MESSAGE];
        snprintf(message, sizeof message, "%s: cannot create pipes: %s", argv_buf[0], strerror(errno));
        for (int i = 0; i < 2; i++) {
            close_fd(&in[i]); close_fd(&out[i]); close_fd(&err[i]); close_fd(&report[i]);
        }
        send_failed(id, message);
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        child_exec(in[0], out[1], err[1], report[1], cwd);
    }
    int fork_errno = errno;
    close(in[0]); close(out[1]); close(err[1]); close(report[1]);
    char message[MAX_MESSAGE];
    ssize_t n = 0;
    if (pid < 0) {
        n = snprintf(message, sizeof message, "%s: cannot fork: %s", argv_buf[0], strerror(fork_errno));
    } else {
        /* Blocks until the child has exec'd (EOF: close-on-exec) or reported a failure. */
        do {
            n = read(report[0], message, sizeof message - 1);
        } while (n < 0 && errno == EINTR);
    }
    close(report[0]);
    if (n > 0) {
        message[n] = '\0';
        if (pid > 0) {
            waitpid(pid, NULL, 0);     /* it exits at once with 127; reap it here, not as an exec */
        }
        close(in[1]); close(out[0]); close(err[0]);
        send_failed(id, message);
        return;
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    *e = (struct exec) { .used = 1, .id = id, .pid = pid, .in_fd = in[1], .out_fd = out[0], .err_fd = err[0] };
    if (!is_init && test_group_count < MAX_TEST_GROUPS) {
        test_groups[test_group_count++] = pid;
    }
    send_ids(T_STARTED, id, (uint32_t) pid, 0, 2);
}

/* Writes as much pending stdin as the pipe takes now. */
static void flush_stdin(struct exec *e) {
    while (e->pending_off < e->pending_len) {
        ssize_t n = write(e->in_fd, e->pending + e->pending_off, e->pending_len - e->pending_off);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        if (n < 0) {                   /* EPIPE: the process closed its stdin; drop the rest */
            close_stdin(e);
            return;
        }
        e->pending_off += (size_t) n;
    }
    free(e->pending);
    e->pending = NULL;
    e->pending_len = e->pending_off = 0;
    if (e->close_stdin_when_drained) {
        close_stdin(e);
    }
}

static void queue_stdin(struct exec *e, const unsigned char *data, size_t len) {
    if (e->in_fd < 0 || e->close_stdin_when_drained) {
        return;                        /* already closed: the host raced with the process */
    }
    if (len == 0) {
        e->close_stdin_when_drained = 1;
        flush_stdin(e);
        return;
    }
    size_t live = e->pending_len - e->pending_off;
    if (live + len > MAX_STDIN_PENDING) {
        /* The host writes more than the process reads. Refuse rather than grow without bound:
         * the process sees end-of-file where its input was cut. */
        close_stdin(e);
        return;
    }
    if (e->pending_off > 0) {          /* compact before growing */
        memmove(e->pending, e->pending + e->pending_off, live);
        e->pending_len = live;
        e->pending_off = 0;
    }
    char *grown = realloc(e->pending, live + len);
    if (grown == NULL) {
        close_stdin(e);
        return;
    }
    memcpy(grown + live, data, len);
    e->pending = grown;
    e->pending_len = live + len;
    flush_stdin(e);
}

/* ---------------------------------------------------------------- files */

static int make_parents(char *path) {
    for (char *slash = strchr(path + 1, '/'); slash != NULL; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        int r = mkdir(path, 0755);
        int saved = errno;
        *slash = '/';
        if (r < 0 && saved != EEXIST) {
            errno = saved;
            return -1;
        }
    }
    return 0;
}

static void write_file(uint32_t id, char *path, mode_t mode, const unsigned char *data, size_t len) {
    char message[MAX_MESSAGE];
    if (path[0] != '/') {
        snprintf(message, sizeof message, "%.300s: path must be absolute", path);
        send_failed(id, message);
        return;
    }
    if (make_parents(path) < 0) {
        snprintf(message, sizeof message, "cannot create parent directories of %.300s: %s", path, strerror(errno));
        send_failed(id, message);
        return;
    }
    /* O_NOFOLLOW: a symlink planted by sandboxed code is refused. O_NONBLOCK: a planted FIFO
     * fails to open instead of blocking the agent; the S_ISREG check refuses it otherwise. */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(message, sizeof message, "cannot open %.300s for writing: %s", path,
                errno == ELOOP ? "it is a symbolic link" : strerror(errno));
        if (fd >= 0) close(fd);
        send_failed(id, message);
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        snprintf(message, sizeof message, "cannot write %.300s: not a regular file", path);
        send_failed(id, message);
        return;
    }
    /* An existing file keeps its old mode through O_TRUNC; the caller asked for `mode`. */
    int ok = fchmod(fd, mode) == 0;
    for (size_t done = 0; ok && done < len;) {
        ssize_t n = write(fd, data + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        ok = n > 0;
        if (ok) done += (size_t) n;
    }
    if (!ok || close(fd) < 0) {
        snprintf(message, sizeof message, "cannot write %.300s: %s", path, strerror(errno));
        if (!ok) close(fd);
        send_failed(id, message);
        return;
    }
    send_ids(T_DONE, id, 0, 0, 1);
}

/* ---------------------------------------------------------------- parsing host frames */

struct reader {
    const unsigned char *p;
    size_t left;
    char *arena_next;
};

static uint32_t read_u32(struct reader *r) {
    if (r->left < 4) die("malformed frame from host: truncated integer");
    uint32_t v = get_u32(r->p);
    r->p += 4;
    r->left -= 4;
    return v;
}

/* Copies one string into the arena, NUL-terminated; refuses embedded NULs. */
static char *read_string(struct reader *r) {
    uint32_t len = read_u32(r);
    if (len > r->left) die("malformed frame from host: string longer than the frame");
    if (memchr(r->p, '\0', len) != NULL) die("malformed frame from host: NUL byte in a string");
    char *s = r->arena_next;
    memcpy(s, r->p, len);
    s[len] = '\0';
    r->arena_next += len + 1;
    r->p += len;
    r->left -= len;
    return s;
}

static void read_list(struct reader *r, char **list, const char *what) {
    uint32_t count = read_u32(r);
    if (count > MAX_STRINGS || count > r->left / 4) die("malformed frame from host: %s has too many entries", what);
    for (uint32_t i = 0; i < count; i++) {
        list[i] = read_string(r);
    }
    list[count] = NULL;
}

static void handle_frame(int type, const unsigned char *payload, size_t len) {
    struct reader r = { payload, len, arena };
    uint32_t id = read_u32(&r);
    switch (type) {
    case T_EXEC: {
        if (find_exec(id) != NULL) die("malformed frame from host: exec id %u is already running", id);
        read_list(&r, argv_buf, "argv");
        read_list(&r, env_buf, "env");
        char *cwd = read_string(&r);
        if (r.left != 0) die("malformed frame from host: trailing bytes after EXEC");
        if (argv_buf[0] == NULL || argv_buf[0][0] == '\0') die("malformed frame from host: empty argv");
        for (int i = 0; env_buf[i] != NULL; i++) {
            if (strchr(env_buf[i], '=') == NULL) die("malformed frame from host: env entry without '='");
        }
        if (cwd[0] != '/') die("malformed frame from host: cwd is not absolute");
        start_exec(id, cwd);
        break;
    }
    case T_STDIN: {
        struct exec *e = find_exec(id);
        if (e != NULL) {               /* unknown: the process already exited */
            queue_stdin(e, r.p, r.left);
        }
        break;
    }
    case T_SIGNAL: {
        uint32_t sig = read_u32(&r);
        if (r.left != 0 || sig == 0 || sig >= NSIG) die("malformed frame from host: bad SIGNAL");
        struct exec *e = find_exec(id);
        if (e != NULL) {
            kill(-e->pid, (int) sig);
        }
        break;
    }
    case T_WRITE_FILE: {
        char *path = read_string(&r);
        uint32_t mode = read_u32(&r);
        if (path[0] == '\0' || strlen(path) >= PATH_MAX) die("malformed frame from host: bad WRITE_FILE path");
        if (mode > 07777) die("malformed frame from host: bad WRITE_FILE mode");
        write_file(id, path, (mode_t) mode, r.p, r.left);
        break;
    }
    default:
        die("malformed frame from host: unknown type %d", type);
    }
}

/* Reads what the socket has (never blocks) and handles each frame once complete. */
static void read_control(void) {
    size_t want = in_have < 4 ? 4 : 4 + get_u32(in_frame);
    ssize_t n = recv(sock, in_frame + in_have, want - in_have, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    if (n <= 0) {
        die("");                       /* the host closed the connection: end the sandbox */
    }
    in_have += (size_t) n;
    if (in_have == 4) {
        uint32_t len = get_u32(in_frame);
        if (len < 5 || len > MAX_FRAME) die("malformed frame from host: length %u", len);
    } else if (in_have == want && in_have > 4) {
        handle_frame(in_frame[4], in_frame + 5, in_have - 5);
        in_have = 0;
    }
}

/* ---------------------------------------------------------------- main loop */

static int connect_to(const char *path) {
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof addr.sun_path) {
        return -1;
    }
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *) &addr, sizeof addr) < 0) {
        return -1;
    }
    return fd;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fputs("usage: airlock-agent <socket path>\n", stderr);
        return 2;
    }
    /* Sandboxed code runs as our user: without this it could ptrace us or read /proc/1/fd. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    is_init = getpid() == 1;
    if (!is_init) {
        /* Outside a pid namespace, adopt orphans ourselves, as PID 1 would, so they are reaped
         * here and their process groups stay reserved until we kill them. */
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    /* Keep 0-2 occupied so no pipe we create lands there and gets clobbered by dup2 in a child. */
    for (int fd = open("/dev/null", O_RDWR); fd >= 0 && fd <= 2; fd = open("/dev/null", O_RDWR)) {
    }
    signal(SIGPIPE, SIG_IGN);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sigfd < 0) {
        perror("airlock-agent: signalfd");
        return 1;
    }
    sock = connect_to(argv[1]);
    if (sock < 0) {
        fprintf(stderr, "airlock-agent: cannot connect to %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    send_ids(T_HELLO, PROTOCOL_VERSION, 0, 0, 1);

    struct pollfd fds[2 + 3 * MAX_EXECS];
    struct { struct exec *e; int kind; } owner[2 + 3 * MAX_EXECS];
    for (;;) {
        int n = 0;
        fds[n++] = (struct pollfd) { .fd = sock, .events = POLLIN };
        fds[n++] = (struct pollfd) { .fd = sigfd, .events = POLLIN };
        for (int i = 0; i < MAX_EXECS; i++) {
            struct exec *e = &execs[i];
            if (!e->used) continue;
            if (e->out_fd >= 0) { owner[n].e = e; owner[n].kind = T_STDOUT; fds[n++] = (struct pollfd) { .fd = e->out_fd, .events = POLLIN }; }
            if (e->err_fd >= 0) { owner[n].e = e; owner[n].kind = T_STDERR; fds[n++] = (struct pollfd) { .fd = e->err_fd, .events = POLLIN }; }
            if (e->in_fd >= 0 && e->pending != NULL) { owner[n].e = e; owner[n].kind = T_STDIN; fds[n++] = (struct pollfd) { .fd = e->in_fd, .events = POLLOUT }; }
        }
        if (poll(fds, (nfds_t) n, -1) < 0) {
            if (errno == EINTR) continue;
            die("poll: %s", strerror(errno));
        }
        /* Output first, then exits: an exit drains the rest of the output before EXIT, and
         * fds[] entries of a finished exec must not be used after its slot is freed. */
        for (int i = 2; i < n; i++) {
            struct exec *e = owner[i].e;
            if (fds[i].revents == 0 || !e->used) continue;
            if (owner[i].kind == T_STDOUT && e->out_fd == fds[i].fd) forward_output(e, &e->out_fd, T_STDOUT);
            else if (owner[i].kind == T_STDERR && e->err_fd == fds[i].fd) forward_output(e, &e->err_fd, T_STDERR);
            else if (owner[i].kind == T_STDIN && e->in_fd == fds[i].fd) {
                if (fds[i].revents & (POLLERR | POLLHUP)) close_stdin(e);
                else flush_stdin(e);
            }
        }
        if (fds[1].revents) {
            struct signalfd_siginfo info;
            while (read(sigfd, &info, sizeof info) > 0) {
            }
            reap_children();
        }
        if (fds[0].revents) {
            read_control();
        }
    }
}
