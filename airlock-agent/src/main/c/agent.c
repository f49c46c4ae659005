/*
 * airlock-agent: PID 1 of every Airlock sandbox. See docs/agent-protocol.md.
 *
 * Usage: airlock-agent [--egress-port PORT [--egress-socket PATH | --egress-device PATH]] <unix socket path | character device>
 *
 * The agent connects to the host's socket (or opens the character device, such as the
 * virtio-serial port of a microVM guest, whose other end is the host's socket), says HELLO, then runs one single-threaded poll() loop
 * over the control socket, a signalfd for SIGCHLD, and the pipes of every running execution. It
 * trusts the host (the only peer) but validates every frame anyway: malformed input means the host
 * side is broken, and the safe answer is to kill everything and exit.
 *
 * It runs with exactly the privileges of the code it starts, so it holds no secrets; what it must
 * not do is let sandboxed code stall it, confuse it about which process is which, or make it write
 * through a symlink the code planted.
 *
 * With --egress-port it is also the sandbox's egress bridge: it listens on 127.0.0.1:PORT and
 * [::1]:PORT and splices every accepted connection to the host's egress proxy socket
 * (/run/airlock/egress.sock), in the same poll loop, with bounded buffers; with --egress-device (a
 * microVM guest, which has no socket of the host's) it multiplexes them over that device instead,
 * bounded by credits (see the egress multiplexer below). It makes no policy decision: the host
 * proxy does, and code that connects to the socket directly gains nothing.
 *
 * Every execution runs under a supervisor of its own (see supervise): a child of the agent that
 * is a child subreaper, so everything the execution starts stays below it, whatever setsid or
 * double fork it does, and killing the execution can end all of it on any kernel.
 *
 * When it is not PID 1 (tests run it directly on a development host) it must not kill(-1): that
 * would kill every process of the user. It then kills only what is below it in the process tree.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum {
    T_EXEC = 1, T_STDIN = 2, T_SIGNAL = 3, T_WRITE_FILE = 4, T_EXEC_HELD = 5, T_RELEASE = 6, T_RESIZE = 7,
    T_HELLO = 10, T_STARTED = 11, T_STDOUT = 12, T_STDERR = 13, T_EXIT = 14, T_FAILED = 15, T_DONE = 16,
    T_DATA = 17, T_FILEINFO = 18, T_FORKED = 19,
    T_READ_FILE = 20, T_STAT = 21, T_LIST = 22, T_MKDIR = 23, T_REMOVE = 24, T_RENAME = 25,
    T_WALK = 26, T_KILL_ALL = 27, T_DETACH = 28, T_RESUME = 29,
    /* Port streams: T_PORT_BASE + the egress multiplexer's frame type (MUX_OPEN .. MUX_CREDIT). */
    T_SPARE = 35, T_EXEC_SPARE = 36, T_NEXT_SPARE = 37,
    T_PORT_BASE = 29, T_PORT_OPEN = 30, T_PORT_DATA = 31, T_PORT_EOF = 32, T_PORT_RESET = 33, T_PORT_CREDIT = 34,
};

enum { WRITE_APPEND = 1, MKDIR_PARENTS = 1, REMOVE_RECURSIVE = 1, READ_NOFOLLOW = 1 };
enum { FT_FILE = 0, FT_DIRECTORY = 1, FT_SYMLINK = 2, FT_OTHER = 3 };

#define PROTOCOL_VERSION 8
#define MAX_TTY_SIZE 1000              /* largest rows or cols of a terminal (RESIZE, EXEC with a size) */
#define MAX_FRAME (1024 * 1024 + 64)   /* largest N (type + payload) either side may send */
#define CHUNK (64 * 1024)              /* largest STDOUT/STDERR payload */
#define MAX_EXECS 64
#define MAX_STRINGS 16384              /* per string list (argv or env) */
#define MAX_STDIN_PENDING (16 * 1024 * 1024 + MAX_FRAME)
#define MAX_MESSAGE 512                /* FAILED message */
#define MAX_DRAIN (32 * CHUNK)         /* bound on the final drain of one pipe, see finish_exec */
#define MAX_SUPERVISORS 32768         /* supervisors alive at once: running executions and those whose background lives on */
#define MAX_PROCS 65536               /* processes one scan of /proc considers (a sandbox holds at most 32768) */
#define TREE_KILL_TRIES 100           /* killing an execution's tree: up to 100 scans of /proc, 10 ms apart */
#define MAX_READS 16                   /* READ_FILE streams in progress at once */
#define MAX_LIST 10000                 /* entries one LIST may report */
#define MAX_REMOVE_DEPTH 128           /* directory levels a recursive REMOVE descends (one fd each) */
#define MAX_WALK_DEPTH 256             /* largest maxDepth a WALK may ask for (one fd each level) */
#define KILL_WAIT_MS 5000              /* KILL_ALL waits up to 5 s for the processes to be gone */
#define MAX_BRIDGES 64                 /* egress connections spliced at once; more are refused */
#define BRIDGE_BUF (32 * 1024)         /* per direction of one egress connection */
#define MAX_PORTS 32                   /* port streams (PORT_OPEN) open at once; more are refused with EMFILE */
#define DEFAULT_EGRESS_SOCKET "/run/airlock/egress.sock"

struct exec {
    int used;
    uint32_t id;
    pid_t pid;                         /* the command (STARTED); 0 until its supervisor has forked it */
    pid_t supervisor;                  /* our child that forks the command and holds its tree */
    int out_fd, err_fd, in_fd;         /* -1 once closed */
    int status_fd;                     /* from the supervisor: the command's pid, then its wait status */
    int exit_status, exit_known;       /* the command's, once reported by a supervisor that is exiting */
    char *pending;                     /* stdin not yet accepted by the pipe */
    size_t pending_len, pending_off;
    int close_stdin_when_drained;
    /* EXEC_HELD: forked, waiting for RELEASE before it may exec; -1 otherwise. The child reads
     * one byte from go_fd ('g': go on); report_fd tells whether its exec then succeeded. */
    int go_fd, report_fd;
    /* On a pseudo-terminal: out_fd is its master, in_fd a dup of it, err_fd -1. */
    int tty;
};

static struct exec execs[MAX_EXECS];

/* A READ_FILE being streamed: one chunk per loop iteration, so other executions keep flowing. */
struct read_stream {
    int used;
    uint32_t id;
    int fd;
    uint64_t max, sent;
};

static struct read_stream reads[MAX_READS];
static int sock = -1;
static int sock_is_device;             /* the channel is a character device: read/write, not recv/send */
static int is_init;                    /* getpid() == 1: we own the whole pid namespace */
static int quiesced;                   /* after KILL_ALL: no EXEC starts a process any more */
static const char *control_path;       /* the host channel */
static char detached_path[4096];       /* where the host listens again after DETACH */

/* Every supervisor we forked that we have not reaped yet: our only children that are not strays. */
static pid_t supervisors[MAX_SUPERVISORS];
static int supervisor_count;

/* Incoming frame: 4-byte header, then N bytes. Filled incrementally, never blocking on the host. */
static unsigned char in_frame[4 + MAX_FRAME];
static size_t in_have;

/* Parsed EXEC strings, NUL-terminated. Each needs at most its 4-byte length prefix in the frame,
 * so the frame size bounds the arena. */
static char arena[MAX_FRAME];
static char *argv_buf[MAX_STRINGS + 1];
static char *env_buf[MAX_STRINGS + 1];

/* Large enough for every frame we send: STDOUT/DATA (id + CHUNK), FAILED (id, errno, message)
 * and FILEINFO (two strings below PATH_MAX each, plus fixed fields). */
static unsigned char out_frame[4 + 1 + 8 + CHUNK + MAX_MESSAGE];
_Static_assert(sizeof out_frame > 5 + 4 + 2 * (4 + PATH_MAX) + 1 + 8 + 4 + 8, "out_frame too small for FILEINFO");

/* ---------------------------------------------------------------- process trees
 *
 * Which processes belong to an execution is read from the process tree: /proc/PID/stat names each
 * process's parent. Every execution's supervisor is a child subreaper, so a process of the
 * execution whose parent dies is adopted by the supervisor, never by us: setsid, a double fork or
 * a new process group cannot take it out of the supervisor's subtree. Only the death of the
 * supervisor itself (the code may SIGKILL it: same uid) lets its descendants reach us; a child of
 * ours that is not a supervisor is therefore a stray of such an execution, and is killed. The scan
 * works the same under any kernel that has /proc (the host's, gVisor's Sentry, a microVM's guest).
 */

static pid_t self;                     /* our pid: 1, or any in test mode */
static int sigchld_fd = -1;            /* the signalfd for SIGCHLD, made by main */

/*
 * The spare supervisor (SPARE): forked ahead of time and waiting, so that the host can place it in
 * the next execution's cgroup while nothing waits for that (moving a process between cgroups waits
 * for an RCU grace period, milliseconds); EXEC_SPARE then hands it the execution over `sock` (the
 * execution's pipes as SCM_RIGHTS, its EXEC payload in `buf`, shared memory mapped before the fork).
 */
struct spare {
    pid_t pid;                         /* 0: none */
    int sock;
    unsigned char *buf;
};
static struct spare spare = { 0, -1, NULL };
static int fork_spare(struct spare *made);

static int supervisor_index(pid_t pid) {
    for (int i = 0; i < supervisor_count; i++) {
        if (supervisors[i] == pid) return i;
    }
    return -1;
}

/* One process of a /proc scan. below: 0 not known yet, 1 below the root of this scan, 2 not. */
struct proc {
    pid_t pid, ppid;
    char live;                         /* not a zombie: it may still run, and fork */
    char below;
};

static struct proc procs[MAX_PROCS];
static int proc_count;
static int trail[MAX_PROCS];

static int by_pid(const void *a, const void *b) {
    pid_t x = ((const struct proc *) a)->pid, y = ((const struct proc *) b)->pid;
    return (x > y) - (x < y);
}

/* Reads every process's pid, parent and whether it is a zombie, sorted by pid. */
static void scan_procs(void) {
    proc_count = 0;
    DIR *dir = opendir("/proc");
    if (dir == NULL) {
        return;
    }
    struct dirent *entry;
    while (proc_count < MAX_PROCS && (entry = readdir(dir)) != NULL) {
        char *end;
        long pid = strtol(entry->d_name, &end, 10);
        if (*end != '\0' || pid <= 0) continue;
        char path[32], buf[256];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;          /* gone since readdir */
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0) continue;
        buf[n] = '\0';
        /* "pid (comm) state ppid ...": comm may hold anything, ')' too, but is at most 15 bytes. */
        char *paren = strrchr(buf, ')');
        char state;
        long ppid;
        if (paren == NULL || sscanf(paren + 1, " %c %ld", &state, &ppid) != 2) continue;
        procs[proc_count++] = (struct proc) { .pid = (pid_t) pid, .ppid = (pid_t) ppid,
                                              .live = state != 'Z' && state != 'X' && state != 'x' };
    }
    closedir(dir);
    qsort(procs, (size_t) proc_count, sizeof procs[0], by_pid);
}

/* Whether procs[i] is below `root`, following parents up; the answer is kept for the whole chain. */
static int is_below(int i, pid_t root, int spare_supervisors) {
    int n = 0;
    char verdict = 2;
    while (n < proc_count) {
        struct proc *p = &procs[i];
        if (p->below != 0) {
            verdict = p->below;
            break;
        }
        trail[n++] = i;
        if (p->ppid == root) {
            verdict = spare_supervisors && (supervisor_index(p->pid) >= 0 || p->pid == spare.pid) ? 2 : 1;
            break;
        }
        struct proc key = { .pid = p->ppid };
        struct proc *parent = bsearch(&key, procs, (size_t) proc_count, sizeof procs[0], by_pid);
        if (parent == NULL) {
            break;                     /* its parent is outside our pid namespace, or gone */
        }
        i = (int) (parent - procs);
    }
    for (int k = 0; k < n; k++) {
        procs[trail[k]].below = verdict;
    }
    return verdict == 1;
}

/*
 * One scan: SIGKILL to every live process below `root` (with spare_supervisors, not to our
 * supervisors nor anything below them). Returns how many it signalled.
 */
static int kill_below_once(pid_t root, int spare_supervisors) {
    scan_procs();
    int killed = 0;
    for (int i = 0; i < proc_count; i++) {
        if (procs[i].live && is_below(i, root, spare_supervisors)) {
            kill(procs[i].pid, SIGKILL);
            killed++;
        }
    }
    return killed;
}

/*
 * SIGKILL to everything below `root`, scan after scan, until two scans 10 ms apart find nothing
 * alive there (or TREE_KILL_TRIES scans were made). One empty scan after a kill is no proof: a
 * process whose parent died during the scan may have been missed (the parent's entry gone, the
 * process not yet shown under its new one); two in a row are. The first scan finding nothing is:
 * nothing was dying then. Returns whether anything was found.
 */
static int kill_below(pid_t root, int spare_supervisors) {
    int found = 0;
    for (int tries = 0, clean = 0; tries < TREE_KILL_TRIES && clean < 2; tries++) {
        if (kill_below_once(root, spare_supervisors) > 0) {
            found = 1;
            clean = 0;
        } else if (!found) {
            return 0;
        } else {
            clean++;
        }
        usleep(10 * 1000);
    }
    return found;
}

/*
 * Kills an execution's whole tree: every process below its supervisor, then the supervisor
 * (whose death the reap turns into EXIT). The supervisor is killed last, and by us: until then
 * it adopts every orphan of the tree, and after, nothing is left that it should have reaped.
 */
static void kill_execution_tree(pid_t supervisor) {
    kill_below(supervisor, 0);
    kill(supervisor, SIGKILL);
}

/* Kills every stray: a process we adopted because the supervisor above it died. */
static void kill_strays(void) {
    kill_below(self, 1);
}

/* ---------------------------------------------------------------- shutdown */

/* SIGKILL to every process we may end: all of the namespace but us as PID 1, else all below us. */
static void signal_everything(void) {
    if (is_init) {
        /* Every process in the namespace except us; our exit then ends the namespace. */
        kill(-1, SIGKILL);
        return;
    }
    /* We are a child subreaper: nothing we started can leave our subtree. */
    kill_below_once(self, 0);
}

static void kill_everything(void) {
    if (is_init) {
        signal_everything();
        return;
    }
    kill_below(self, 0);
    /* Reap them, so they do not linger as zombies of the host's init, which may not reap. */
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
        ssize_t n = sock_is_device ? write(sock, out_frame + sent, total - sent)
                                   : send(sock, out_frame + sent, total - sent, MSG_NOSIGNAL);
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

/* FAILED: u32 id, i32 errno (0 when no system call failed), string message. */
static void send_failed_errno(uint32_t id, int err, const char *message) {
    size_t len = strnlen(message, MAX_MESSAGE);
    put_u32(out_frame + 5, id);
    put_u32(out_frame + 9, (uint32_t) err);
    put_u32(out_frame + 13, (uint32_t) len);
    memcpy(out_frame + 17, message, len);
    send_frame(T_FAILED, 12 + len);
}

static void send_failed(uint32_t id, const char *message) {
    send_failed_errno(id, 0, message);
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
 * The command exited (its supervisor said so), or the supervisor died before it could: forward
 * what the command left in its pipes, then EXIT. Reading stops at
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
    close_fd(&e->status_fd);
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

static void forget_held(struct exec *e, const char *why);

/* Lets go of a spare supervisor: after its hand-off, or (kill_it) because it cannot be used. */
static void forget_spare(struct spare *s, int kill_it) {
    if (kill_it && s->pid > 0) kill(s->pid, SIGKILL);
    close_fd(&s->sock);
    if (s->buf != NULL) munmap(s->buf, MAX_FRAME);
    *s = (struct spare) { 0, -1, NULL };
}

/* The exec whose supervisor is `pid`, or NULL (its EXIT or FAILED was sent already). */
static struct exec *exec_of_supervisor(pid_t pid) {
    for (int i = 0; i < MAX_EXECS; i++) {
        if (execs[i].used && execs[i].supervisor == pid) return &execs[i];
    }
    return NULL;
}

/*
 * Reads the command's wait status from the supervisor, if it sent it, and whether the supervisor
 * is exiting with it (nothing else of the execution was left). 1 if it did, 0 if not yet, -1 at EOF.
 */
static int read_status(struct exec *e, int *status, int *last) {
    unsigned char b[5];
    ssize_t n;
    do {
        n = read(e->status_fd, b, sizeof b);
    } while (n < 0 && errno == EINTR);
    if (n == sizeof b) {
        *status = (int) get_u32(b);
        *last = b[4] == 'e';
        return 1;
    }
    return n < 0 && errno == EAGAIN ? 0 : -1;
}

/*
 * The supervisor's pipe is readable: the command's exit, or the end of a supervisor that died
 * first. A supervisor that exits with the report is reaped before EXIT goes out, so the host finds
 * the execution's cgroup empty once it has EXIT; one that lives on (background processes) is not.
 */
static void on_status(struct exec *e) {
    int status, last;
    int r = read_status(e, &status, &last);
    if (r > 0 && !last) {
        finish_exec(e, status);
    } else if (r != 0) {
        if (r > 0) {
            e->exit_status = status;
            e->exit_known = 1;
        }
        close_fd(&e->status_fd);       /* it exits or died: the reap of it ends the exec */
    }
}

/*
 * Reaps every child that has exited: supervisors, and strays (anything else we were made to
 * adopt). A supervisor that dies before it reported its command's exit ends the exec with its own
 * wait status (a SIGKILL, in practice: the host's kill, or the code's). A supervisor killed by a
 * signal, or a stray that died, means strays may be alive: they are killed.
 */
static void reap_children(void) {
    int strays = 0;
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) {
            break;                     /* 0: none exited yet; -1/ECHILD: no children left */
        }
        if (pid == spare.pid) {
            forget_spare(&spare, 0);           /* killed while it waited: the next EXEC_SPARE falls back to a fork */
            continue;
        }
        int k = supervisor_index(pid);
        if (k < 0) {
            strays = 1;
            continue;
        }
        supervisors[k] = supervisors[--supervisor_count];
        if (WIFSIGNALED(status)) {
            strays = 1;
        }
        struct exec *e = exec_of_supervisor(pid);
        if (e == NULL) {
            continue;                  /* it outlived its command, for that command's background */
        }
        int reported, last;
        if (e->go_fd >= 0) {
            forget_held(e, "killed before the host released it");
        } else if (e->exit_known) {
            finish_exec(e, e->exit_status);
        } else if (e->status_fd >= 0 && read_status(e, &reported, &last) > 0) {
            finish_exec(e, reported);
        } else {
            finish_exec(e, status);
        }
    }
    if (strays) {
        kill_strays();
    }
}

/* In the supervisor or the command, before exec: report why we could not start and give up. */
static _Noreturn void child_fail(int report_fd, const char *fmt, const char *arg) {
    char message[MAX_MESSAGE];
    int n = snprintf(message, sizeof message, fmt, arg, strerror(errno));
    if (n > 0) {
        ssize_t ignored = write(report_fd, message, (size_t) n < sizeof message ? (size_t) n : sizeof message - 1);
        (void) ignored;
    }
    _exit(127);
}

/* The command, forked by its supervisor: its own session, its pipes as 0-2, then exec. */
static _Noreturn void child_exec(int in_r, int out_w, int err_w, int report_fd, const char *cwd, int tty) {
    setsid();
    /* On a terminal, its slave (in_r = out_w = err_w) becomes the new session's controlling
     * terminal, so ^C, ^Z and SIGWINCH reach the foreground process group. */
    if (tty && ioctl(in_r, TIOCSCTTY, 0) < 0) {
        child_fail(report_fd, "%s: cannot make the pseudo-terminal the controlling terminal: %s", argv_buf[0]);
    }
    /* dup2 clears close-on-exec on 0-2; every other descriptor the agent holds is close-on-exec. */
    if (dup2(in_r, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0) {
        child_fail(report_fd, "%s: cannot set up standard streams: %s", argv_buf[0]);
    }
    if (tty && in_r > 2) {
        close(in_r);                   /* the slave lives on as 0-2 */
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

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *) a, y = *(const int *) b;
    return (x > y) - (x < y);
}

/*
 * Closes every descriptor from 3 up but the `n` in keep (ascending): a supervisor does not exec,
 * so close-on-exec does nothing for it, and it must not hold the control socket, other executions'
 * pipes or egress connections open while it lives on. close_range where the kernel has it, else
 * the list in /proc/self/fd.
 */
static void close_all_but(int *keep, int n) {
    qsort(keep, (size_t) n, sizeof keep[0], cmp_int);
    unsigned int from = 3;
    int ok = 1;
    for (int i = 0; i <= n && ok; i++) {
        unsigned int to = i < n ? (unsigned int) keep[i] : ~0U;
        if (i < n && keep[i] < 3) continue;
        if (to > from) ok = syscall(SYS_close_range, from, to - 1, 0) == 0;
        from = to + 1;
    }
    if (ok) return;
    DIR *dir = opendir("/proc/self/fd");
    if (dir == NULL) return;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        int fd = atoi(entry->d_name);
        if (fd < 3 || fd == dirfd(dir) || bsearch(&fd, keep, (size_t) n, sizeof keep[0], cmp_int) != NULL) continue;
        close(fd);
    }
    closedir(dir);
}

/* 4 bytes, and a 5th when `tail` is not 0. At most 9 bytes ever go down the pipe: it never blocks. */
static void put_status(int fd, uint32_t v, char tail) {
    unsigned char b[5];
    put_u32(b, v);
    b[4] = (unsigned char) tail;
    ssize_t ignored = write(fd, b, tail != 0 ? 5 : 4);
    (void) ignored;
}

/*
 * The supervisor of one execution: forked by the agent, it never execs. It makes itself a child
 * subreaper, so every process the command starts stays in its subtree: an orphan is adopted by
 * it, not by PID 1, whatever session or process group it is in. It forks the command (after the
 * host's RELEASE, for a held exec: the host places the supervisor in the execution's cgroup, and
 * the command is born inside), sends the agent the command's pid and then its wait status on the
 * status pipe (with 'e' if it exits at once, nothing else being left, else 'l': it lives on),
 * reaps every orphan it adopts, and exits once it has no child left: a command's
 * background processes (`cmd &`) live on after it, under the supervisor. It ignores every signal it
 * can, so that only SIGKILL (the agent's, the host's, or the code's own) or SIGSTOP reaches it.
 */
static _Noreturn void supervise(int in_r, int out_w, int err_w, int report_w, int status_w, int go_r, const char *cwd, int tty) {
    int keep[] = { in_r, out_w, err_w, report_w, status_w, go_r };
    int kept = go_r >= 0 ? 6 : 5;
    if (tty) {                         /* in_r = out_w = err_w: the terminal's slave, once */
        keep[1] = report_w; keep[2] = status_w; keep[3] = go_r;
        kept -= 2;
    }
    close_all_but(keep, kept);
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    for (int s = 1; s < NSIG; s++) {
        if (s != SIGCHLD) signal(s, SIG_IGN);   /* an ignored SIGCHLD would reap the command for us */
    }
    if (go_r >= 0) {
        /* Held: the host moves us into this execution's own cgroup, then lets us go on. */
        char go = 0;
        ssize_t n;
        do {
            n = read(go_r, &go, 1);
        } while (n < 0 && errno == EINTR);
        if (n != 1 || go != 'g') {
            errno = ECANCELED;
            child_fail(report_w, "%s: not started: the host did not release it: %s", argv_buf[0]);
        }
        close(go_r);
    }
    pid_t command = fork();
    if (command == 0) {
        close(status_w);
        child_exec(in_r, out_w, err_w, report_w, cwd, tty);
    }
    if (command < 0) {
        child_fail(report_w, "%s: cannot fork: %s", argv_buf[0]);
    }
    /* The pid first, then the report pipe closed: when the agent sees the command exec'd, it is there. */
    put_status(status_w, (uint32_t) command, 0);
    close(in_r);
    if (!tty) {
        close(out_w); close(err_w);
    }
    close(report_w);
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid == command) {
            /* Reap what else has ended: with nothing left, nothing can be adopted any more. */
            pid_t other;
            while ((other = waitpid(-1, NULL, WNOHANG)) > 0) {
            }
            int last = other < 0 && errno == ECHILD;
            put_status(status_w, (uint32_t) status, last ? 'e' : 'l');
            if (last) _exit(0);
        } else if (pid < 0 && errno != EINTR) {
            _exit(0);                  /* ECHILD: nothing of the execution is left */
        }
    }
}

/* A held exec that ends before RELEASE (its supervisor was killed from inside): it never started. */
static void forget_held(struct exec *e, const char *why) {
    close_fd(&e->go_fd);
    close_fd(&e->report_fd);
    close_fd(&e->out_fd);
    close_fd(&e->err_fd);
    close_fd(&e->status_fd);
    close_stdin(e);
    send_failed(e->id, why);
    e->used = 0;
}

/*
 * Waits until the command has exec'd (EOF on the close-on-exec report pipe, which the supervisor
 * closes once it has sent the command's pid) or one of them reported why it could not, then
 * answers STARTED with the command's pid, or FAILED. The wait is short: they only set up and exec.
 */
static void await_exec(struct exec *e) {
    char message[MAX_MESSAGE];
    ssize_t n;
    do {
        n = read(e->report_fd, message, sizeof message - 1);
    } while (n < 0 && errno == EINTR);
    close_fd(&e->report_fd);
    unsigned char pid[4];
    ssize_t got = 0;
    if (n <= 0) {
        do {
            got = read(e->status_fd, pid, sizeof pid);
        } while (got < 0 && errno == EINTR);
        if (got != sizeof pid) {
            snprintf(message, sizeof message, "%s: not started: its supervisor was killed", argv_buf[0]);
            n = (ssize_t) strlen(message);
        }
    }
    if (n > 0) {
        message[n] = '\0';
        /* The supervisor exits by itself (or was killed); the reap finds no exec for it then.
         * Were the command started all the same, it would be a stray, and killed. */
        close_fd(&e->in_fd); close_fd(&e->out_fd); close_fd(&e->err_fd); close_fd(&e->status_fd);
        e->used = 0;
        send_failed(e->id, message);
        return;
    }
    e->pid = (pid_t) get_u32(pid);
    fcntl(e->in_fd, F_SETFL, O_NONBLOCK);
    fcntl(e->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(e->err_fd, F_SETFL, O_NONBLOCK);
    fcntl(e->status_fd, F_SETFL, O_NONBLOCK);
    send_ids(T_STARTED, e->id, (uint32_t) e->pid, 0, 2);
}

/*
 * Opens a new pseudo-terminal of rows x cols in the layout start_exec uses for pipes: out[0] is
 * the master and in[1] a second descriptor of it (so closing stdin never closes the output);
 * in[0] and out[1] are the slave, which the command gets as 0-2 (also in *slave). All
 * close-on-exec. Returns 0, or -1 with errno set and nothing left open.
 */
static int open_tty(int in[2], int out[2], int *slave, uint32_t rows, uint32_t cols) {
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) return -1;
    struct winsize size = { .ws_row = (unsigned short) rows, .ws_col = (unsigned short) cols };
    char name[64];
    if (grantpt(master) < 0 || unlockpt(master) < 0 || ptsname_r(master, name, sizeof name) != 0
            || ioctl(master, TIOCSWINSZ, &size) < 0) {
        int saved = errno;
        close(master);
        errno = saved;
        return -1;
    }
    *slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    int copy = *slave < 0 ? -1 : fcntl(master, F_DUPFD_CLOEXEC, 3);
    if (copy < 0) {
        int saved = errno;
        close(master);
        close_fd(slave);
        errno = saved;
        return -1;
    }
    out[0] = master;
    in[1] = copy;
    in[0] = out[1] = *slave;
    return 0;
}

/*
 * Whether `pid` is stopped (SIGSTOP from the code, which runs as our user): a stopped spare would
 * never fork its command, and await_exec would wait for it. Checked before each hand-off; one
 * stopped in the instant after is the same race as a held supervisor stopped before RELEASE.
 */
static int is_stopped(pid_t pid) {
    char path[32], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1;              /* gone: as unusable as stopped */
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 1;
    buf[n] = '\0';
    char *paren = strrchr(buf, ')');
    return paren == NULL || paren[1] == '\0' || paren[2] == 'T' || paren[2] == 't';
}

/*
 * Hands an execution to the spare supervisor: its five descriptors (stdin's read end, stdout's and
 * stderr's write ends (on a terminal, the slave three times), the report and status pipes' write
 * ends) and its EXEC payload `spec` (validated already). Never blocks: the spare is waiting and
 * the socket holds one message. Returns 0, or -1 if the spare is gone (it is then forgotten).
 */
static int hand_to_spare(struct spare *s, int fds[5], const unsigned char *spec, size_t len) {
    memcpy(s->buf, spec, len);
    unsigned char length[4];
    put_u32(length, (uint32_t) len);
    struct iovec iov = { .iov_base = length, .iov_len = sizeof length };
    union {
        char buf[CMSG_SPACE(5 * sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof control.buf };
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(5 * sizeof(int));
    memcpy(CMSG_DATA(c), fds, 5 * sizeof(int));
    ssize_t sent;
    do {
        sent = sendmsg(s->sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    forget_spare(s, sent != (ssize_t) sizeof length);
    return sent == (ssize_t) sizeof length ? 0 : -1;
}

/*
 * EXEC, or EXEC_HELD (held): then the supervisor waits for RELEASE before it forks the command,
 * and FORKED tells the host the supervisor's pid. EXEC_SPARE (wanted > 0: the spare supervisor the
 * host placed, and `spec` the payload to hand it): that supervisor runs it, already in place, and
 * the next spare is forked first (NEXT_SPARE), so that it exists before the command runs (what the
 * code sees of the sandbox is the same every time); were the spare gone, the execution is held
 * instead, as for EXEC_HELD. With rows > 0 the command runs on a new
 * pseudo-terminal of that size instead of pipes: its output (stdout and stderr alike) is STDOUT.
 */
static void start_exec(uint32_t id, const char *cwd, int held, uint32_t rows, uint32_t cols, pid_t wanted,
                       const unsigned char *spec, size_t spec_len) {
    if (quiesced) {
        send_failed(id, "the sandbox is being destroyed: no process may start in it");
        return;
    }
    struct exec *e = NULL;
    for (int i = 0; i < MAX_EXECS && e == NULL; i++) {
        if (!execs[i].used) e = &execs[i];
    }
    if (e == NULL) {
        send_failed(id, "too many processes running at once (the limit is 64)");
        return;
    }
    if (supervisor_count == MAX_SUPERVISORS) {
        send_failed(id, "too many executions still have background processes running (the limit is 32768)");
        return;
    }
    if (wanted > 0 && wanted == spare.pid && is_stopped(spare.pid)) {
        forget_spare(&spare, 1);       /* stopped by the code: killed, and the execution is held instead */
    }
    int use_spare = wanted > 0 && wanted == spare.pid && spare.sock >= 0;
    held = held || (wanted > 0 && !use_spare);
    int tty = rows > 0;
    int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, report[2] = { -1, -1 }, status[2] = { -1, -1 },
        go[2] = { -1, -1 }, slave = -1;
    if ((tty ? open_tty(in, out, &slave, rows, cols) < 0 : pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
            || pipe2(report, O_CLOEXEC) < 0 || pipe2(status, O_CLOEXEC) < 0 || (held && pipe2(go, O_CLOEXEC) < 0)) {
        char message[MAX_MESSAGE];
        snprintf(message, sizeof message, "%s: cannot create %s: %s", argv_buf[0], tty ? "a pseudo-terminal or pipes" : "pipes",
                 strerror(errno));
        if (tty) {
            in[0] = out[1] = -1;       /* the slave, closed once below */
        }
        for (int i = 0; i < 2; i++) {
            close_fd(&in[i]); close_fd(&out[i]); close_fd(&err[i]); close_fd(&report[i]); close_fd(&status[i]); close_fd(&go[i]);
        }
        close_fd(&slave);
        send_failed(id, message);
        return;
    }
    if (tty) {
        err[1] = slave;                /* the command's 0-2 are all the slave */
    }
    pid_t pid;
    if (use_spare) {
        struct spare taken = spare, next;
        spare = (struct spare) { 0, -1, NULL };
        if (fork_spare(&next) == 0) {
            spare = next;
            send_ids(T_NEXT_SPARE, id, (uint32_t) next.pid, 0, 2);
        }
        int fds[5] = { in[0], out[1], err[1], report[1], status[1] };
        pid = taken.pid;
        if (hand_to_spare(&taken, fds, spec, spec_len) < 0) {
            pid = -1;
            errno = ESRCH;             /* killed by the code since, its end not reaped yet */
        }
    } else {
        pid = fork();
        if (pid == 0) {
            supervise(in[0], out[1], err[1], report[1], status[1], go[0], cwd, tty);
        }
    }
    int fork_errno = errno;
    if (tty) {
        close(slave);                  /* only the supervisor and the command hold it: the master sees EIO when they are gone */
    } else {
        close(in[0]); close(out[1]); close(err[1]);
    }
    close(report[1]); close(status[1]); close_fd(&go[0]);
    if (pid < 0) {
        char message[MAX_MESSAGE];
        snprintf(message, sizeof message, use_spare ? "%s: not started: its supervisor was killed: %s" : "%s: cannot fork: %s",
                 argv_buf[0], strerror(fork_errno));
        close(in[1]); close(out[0]); close_fd(&err[0]); close(report[0]); close(status[0]); close_fd(&go[1]);
        send_failed(id, message);
        return;
    }
    supervisors[supervisor_count++] = pid;
    *e = (struct exec) { .used = 1, .id = id, .supervisor = pid, .in_fd = in[1], .out_fd = out[0], .err_fd = err[0],
                         .status_fd = status[0], .go_fd = go[1], .report_fd = report[0], .tty = tty };
    if (held) {
        send_ids(T_FORKED, id, (uint32_t) pid, 0, 2);
    } else {
        await_exec(e);
    }
}

/* RELEASE: the host placed a held supervisor (go = 1) or gave up on it (go = 0). */
static void release_exec(struct exec *e, int go_on) {
    char byte = go_on ? 'g' : 'x';
    ssize_t ignored = write(e->go_fd, &byte, 1);
    (void) ignored;
    close_fd(&e->go_fd);
    await_exec(e);
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

/*
 * Paths resolve in the sandbox's own mount namespace, so nothing sandboxed code builds can point
 * outside its view. What the code can do is race us: swap a file for a symlink, a FIFO or a device
 * between our calls. So nothing that changes the filesystem follows a symlink in the last
 * component, reads refuse anything but regular files, and a recursive remove walks directory fds,
 * never path strings.
 *
 * Failures are FAILED with the errno and a short reason; the host adds the operation and path.
 */

static void put_u64(unsigned char *p, uint64_t v) {
    put_u32(p, (uint32_t) (v >> 32));
    put_u32(p + 4, (uint32_t) v);
}

static void fail_with_reason(uint32_t id, int err, const char *step, const char *reason) {
    char message[MAX_MESSAGE];
    if (step != NULL) {
        snprintf(message, sizeof message, "%s: %s", step, reason);
    } else {
        snprintf(message, sizeof message, "%s", reason);
    }
    send_failed_errno(id, err, message);
}

/* FAILED with errno `err`: "<step>: <strerror>", or just the strerror text when step is NULL. */
static void fail_op(uint32_t id, int err, const char *step) {
    fail_with_reason(id, err, step, strerror(err));
}

/* As fail_op, after an open with O_NOFOLLOW, where ELOOP means the last component is a symlink. */
static void fail_nofollow(uint32_t id, int err, const char *step) {
    fail_with_reason(id, err, step, err == ELOOP ? "it is a symbolic link" : strerror(err));
}

static int is_absolute(uint32_t id, const char *path) {
    if (path[0] == '/') {
        return 1;
    }
    send_failed_errno(id, EINVAL, "the path must be absolute");
    return 0;
}

static int is_dot(const char *name) {
    return strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

/* Refuses a FIFO, socket or device (EINVAL) or a directory (EISDIR) where a regular file belongs. */
static void fail_not_regular(uint32_t id, mode_t mode) {
    if (S_ISDIR(mode)) {
        send_failed_errno(id, EISDIR, "it is a directory");
    } else {
        send_failed_errno(id, EINVAL, "it is not a regular file (a FIFO, socket or device)");
    }
}

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

static int write_all(int fd, const unsigned char *data, size_t len) {
    for (size_t done = 0; done < len;) {
        ssize_t n = write(fd, data + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = EIO;
            return -1;
        }
        done += (size_t) n;
    }
    return 0;
}

/*
 * Opens the file for one WRITE_FILE frame. The first frame creates or truncates it; an APPEND frame
 * continues the file an earlier frame created, and fails if it has gone meanwhile. O_NOFOLLOW: a
 * symlink planted by sandboxed code is refused. O_NONBLOCK: a planted FIFO fails to open instead of
 * blocking the agent (or opens and is refused by the S_ISREG check).
 */
static int open_for_write(char *path, mode_t mode, uint32_t flags, const char **step) {
    int common = O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC;
    if (flags & WRITE_APPEND) {
        *step = "cannot open the file to append";
        return open(path, common | O_APPEND);
    }
    *step = "cannot create the parent directories";
    if (make_parents(path) < 0) {
        return -1;
    }
    *step = "cannot open the file for writing";
    return open(path, common | O_CREAT | O_TRUNC, mode);
}

static void write_file(uint32_t id, char *path, mode_t mode, uint32_t flags, const unsigned char *data, size_t len) {
    if (!is_absolute(id, path)) return;
    const char *step;
    int fd = open_for_write(path, mode, flags, &step);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int err = errno;
        if (fd >= 0) close(fd);
        fail_nofollow(id, err, step);
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        fail_not_regular(id, st.st_mode);
        return;
    }
    /* An existing file keeps its old mode through O_TRUNC; the caller asked for `mode`. Our own
     * open fd stays writable whatever the mode says. */
    int ok = fchmod(fd, mode) == 0 && write_all(fd, data, len) == 0;
    int err = errno;
    if (close(fd) < 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        fail_op(id, err, "cannot write the file");
        return;
    }
    send_ids(T_DONE, id, 0, 0, 1);
}

/* ---- READ_FILE: streamed one chunk per loop iteration */

static struct read_stream *find_read(uint32_t id) {
    for (int i = 0; i < MAX_READS; i++) {
        if (reads[i].used && reads[i].id == id) {
            return &reads[i];
        }
    }
    return NULL;
}

static int reads_active(void) {
    for (int i = 0; i < MAX_READS; i++) {
        if (reads[i].used) return 1;
    }
    return 0;
}

static int open_nofollow(const char *path, int flags);

static void start_read(uint32_t id, const char *path, uint64_t max, uint32_t flags) {
    if (!is_absolute(id, path)) return;
    struct read_stream *r = NULL;
    for (int i = 0; i < MAX_READS && r == NULL; i++) {
        if (!reads[i].used) r = &reads[i];
    }
    if (r == NULL) {
        send_failed_errno(id, EBUSY, "too many files are being read at once (the limit is 16)");
        return;
    }
    /* Reads may follow symlinks: the code could read the target itself; with NOFOLLOW (the host
     * collecting outputs) a link at any component is refused. O_NONBLOCK: opening a FIFO must not
     * wait for a writer; fstat then refuses it, and devices such as /dev/zero too. */
    int how = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    int fd = (flags & READ_NOFOLLOW) ? open_nofollow(path, how) : open(path, how);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int err = errno;
        if (fd >= 0) close(fd);
        if (flags & READ_NOFOLLOW) fail_nofollow(id, err, NULL);
        else fail_op(id, err, NULL);
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        fail_not_regular(id, st.st_mode);
        return;
    }
    if ((uint64_t) st.st_size > max) {
        close(fd);
        char message[MAX_MESSAGE];
        snprintf(message, sizeof message, "the file has %lld bytes, over the limit of %llu",
                (long long) st.st_size, (unsigned long long) max);
        send_failed_errno(id, EFBIG, message);
        return;
    }
    *r = (struct read_stream) { .used = 1, .id = id, .fd = fd, .max = max };
}

static void end_read(struct read_stream *r) {
    close(r->fd);
    r->used = 0;
}

/*
 * Sends the next chunk of one read, or DONE at end of file. The size was checked at open, but the
 * code may append to the file while we read it: past the limit the read fails with EFBIG, after
 * the chunks that fit.
 */
static void pump_read(struct read_stream *r) {
    uint32_t id = r->id;
    ssize_t n = read(r->fd, out_frame + 9, CHUNK);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        return;                        /* next iteration */
    }
    if (n < 0) {
        int err = errno;
        end_read(r);
        fail_op(id, err, "cannot read the file");
    } else if (n == 0) {
        end_read(r);
        send_ids(T_DONE, id, 0, 0, 1);
    } else if ((uint64_t) n > r->max - r->sent) {
        end_read(r);
        send_failed_errno(id, EFBIG, "the file grew over the limit while it was read");
    } else {
        r->sent += (uint64_t) n;
        put_u32(out_frame + 5, id);
        send_frame(T_DATA, 4 + (size_t) n);
    }
}

static void pump_reads(void) {
    for (int i = 0; i < MAX_READS; i++) {
        if (reads[i].used) pump_read(&reads[i]);
    }
}

/* ---- STAT and LIST */

static int file_type(mode_t mode) {
    if (S_ISREG(mode)) return FT_FILE;
    if (S_ISDIR(mode)) return FT_DIRECTORY;
    if (S_ISLNK(mode)) return FT_SYMLINK;
    return FT_OTHER;
}

static size_t put_string(unsigned char *p, const char *s, size_t len) {
    put_u32(p, (uint32_t) len);
    memcpy(p + 4, s, len);
    return 4 + len;
}

/* FILEINFO: u32 id, string name, u8 type, u64 size, u32 mode, i64 mtime ms, string link target. */
static void send_info(uint32_t id, const char *name, const struct stat *st, const char *link, size_t link_len) {
    unsigned char *start = out_frame + 5, *p = start;
    put_u32(p, id);
    p += 4;
    p += put_string(p, name, strlen(name));
    *p++ = (unsigned char) file_type(st->st_mode);
    put_u64(p, (uint64_t) st->st_size);
    p += 8;
    put_u32(p, (uint32_t) (st->st_mode & 07777));
    p += 4;
    int64_t millis = (int64_t) st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
    put_u64(p, (uint64_t) millis);
    p += 8;
    p += put_string(p, link, link_len);
    send_frame(T_FILEINFO, (size_t) (p - start));
}

/* Sends FILEINFO for `name` relative to `dirfd`, never following it. 0, or -1 with errno. */
static int describe(uint32_t id, int dirfd, const char *name, const char *reported, struct stat *found) {
    struct stat own, *st = found != NULL ? found : &own;
    if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) < 0) {
        return -1;
    }
    char link[PATH_MAX];
    ssize_t link_len = 0;
    if (S_ISLNK(st->st_mode)) {
        link_len = readlinkat(dirfd, name, link, sizeof link);
        if (link_len < 0) return -1;   /* EINVAL: it stopped being a symlink since fstatat */
        if ((size_t) link_len == sizeof link) {
            errno = ENAMETOOLONG;
            return -1;
        }
    }
    send_info(id, reported, st, link, (size_t) link_len);
    return 0;
}

static void stat_path(uint32_t id, const char *path) {
    if (!is_absolute(id, path)) return;
    if (describe(id, AT_FDCWD, path, "", NULL) < 0) {
        fail_op(id, errno, NULL);
    }
}

/*
 * FILEINFO per entry, then DONE. The directory itself may be reached through a symlink (the code
 * could list it itself); its entries are described, not followed. An entry that vanishes while we
 * list (the code is racing us) is left out. More than MAX_LIST entries fail with E2BIG.
 */
static void list_dir(uint32_t id, const char *path) {
    if (!is_absolute(id, path)) return;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    DIR *dir = fd < 0 ? NULL : fdopendir(fd);
    if (dir == NULL) {
        int err = errno;
        if (fd >= 0) close(fd);
        fail_op(id, err, NULL);
        return;
    }
    int count = 0;
    struct dirent *entry;
    while ((errno = 0, entry = readdir(dir)) != NULL) {
        if (is_dot(entry->d_name)) continue;
        if (++count > MAX_LIST) {
            closedir(dir);
            send_failed_errno(id, E2BIG, "the directory has more than 10000 entries");
            return;
        }
        if (describe(id, dirfd(dir), entry->d_name, entry->d_name, NULL) < 0 && errno != ENOENT && errno != EINVAL) {
            int err = errno;
            char step[MAX_MESSAGE / 2];
            snprintf(step, sizeof step, "cannot describe the entry '%.200s'", entry->d_name);
            closedir(dir);
            fail_op(id, err, step);
            return;
        }
    }
    int err = errno;
    closedir(dir);
    if (err != 0) {
        fail_op(id, err, "cannot read the directory");
        return;
    }
    send_ids(T_DONE, id, 0, 0, 1);
}

/* ---- WALK: a bounded listing of a whole tree that never follows a symlink */

/*
 * Opens an absolute path without following a symbolic link at any component: each directory is
 * opened with O_NOFOLLOW relative to its parent's descriptor, the last component with
 * `flags | O_NOFOLLOW`. A link anywhere fails (ELOOP, or ENOTDIR where a directory was needed),
 * so code that swaps a directory for a link between two requests sends us nowhere. -1 with errno.
 */
static int open_nofollow(const char *path, int flags) {
    int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    const char *p = path;
    while (dir >= 0) {
        while (*p == '/') p++;
        if (*p == '\0') {             /* the path is "/" */
            int fd = openat(dir, ".", flags | O_CLOEXEC);
            int err = errno;
            close(dir);
            errno = err;
            return fd;
        }
        const char *end = strchrnul(p, '/'), *next = end;
        while (*next == '/') next++;
        char name[NAME_MAX + 1];
        size_t len = (size_t) (end - p);
        if (len > NAME_MAX) {
            close(dir);
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        int last = *next == '\0';
        int fd = openat(dir, name, last ? flags | O_NOFOLLOW | O_CLOEXEC : O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int err = errno;
        close(dir);
        errno = err;
        if (fd < 0 || last) return fd;
        dir = fd;
        p = next;
    }
    return -1;
}

struct walk {
    uint32_t id;
    uint32_t entries_left;             /* every entry counts: files, directories, links, others */
    uint32_t max_depth;
    char rel[PATH_MAX];                /* the entry being described, relative to the walk's root */
};

/*
 * Describes each entry of the directory `fd` (which it closes) and descends into subdirectories,
 * each opened with O_NOFOLLOW relative to its parent: a directory swapped for a link after it was
 * described is not entered. Entries at depth max_depth are described but not entered; an entry
 * whose relative path would not fit PATH_MAX is left out (still counted); one that vanishes is
 * skipped. Depth-first, so at most max_depth directories are open at once.
 */
static void walk_dir(struct walk *w, int fd, size_t rel_len, uint32_t depth) {
    DIR *dir = fdopendir(fd);
    if (dir == NULL) {
        close(fd);
        return;
    }
    struct dirent *entry;
    while (w->entries_left > 0 && (entry = readdir(dir)) != NULL) {
        if (is_dot(entry->d_name)) continue;
        w->entries_left--;
        size_t name_len = strlen(entry->d_name), sep = rel_len > 0 ? 1 : 0;
        if (rel_len + sep + name_len >= sizeof w->rel) continue;
        if (sep) w->rel[rel_len] = '/';
        memcpy(w->rel + rel_len + sep, entry->d_name, name_len + 1);
        struct stat st;
        if (describe(w->id, dirfd(dir), entry->d_name, w->rel, &st) == 0 && S_ISDIR(st.st_mode) && depth < w->max_depth) {
            int sub = openat(dirfd(dir), entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
            if (sub >= 0) walk_dir(w, sub, rel_len + sep + name_len, depth + 1);
        }
        w->rel[rel_len] = '\0';
    }
    closedir(dir);
}

/* FILEINFO per entry (name: the path relative to `path`), at most max_entries, then DONE. */
static void walk_tree(uint32_t id, const char *path, uint32_t max_entries, uint32_t max_depth) {
    if (!is_absolute(id, path)) return;
    int fd = open_nofollow(path, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
    if (fd < 0) {
        fail_nofollow(id, errno, NULL);
        return;
    }
    static struct walk w;
    w.id = id;
    w.entries_left = max_entries;
    w.max_depth = max_depth;
    w.rel[0] = '\0';
    walk_dir(&w, fd, 0, 1);
    send_ids(T_DONE, id, 0, 0, 1);
}

/* ---- KILL_ALL: every process but us, before the host collects what the sandbox leaves */

static long monotonic_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * Waits until a child ends (its SIGCHLD on the signalfd, drained here; the caller reaps) or
 * `ms` pass. Every child that ends after the drain raises SIGCHLD again, so a caller that
 * drains, then reaps, then waits here misses none.
 */
static void await_child_end(int ms) {
    if (sigchld_fd < 0) {
        usleep((useconds_t) ms * 1000);
        return;
    }
    struct pollfd p = { .fd = sigchld_fd, .events = POLLIN };
    if (poll(&p, 1, ms) > 0) {
        struct signalfd_siginfo info;
        while (read(sigchld_fd, &info, sizeof info) > 0) {
        }
    }
}

/*
 * Kills, reaps, and goes on as soon as the last child is gone: the spare supervisor is always
 * one, and dies within a millisecond, so waking on SIGCHLD instead of every 10 ms takes most of
 * a sandbox's teardown off the caller's path. Kills again at each wake: a fork may have raced.
 */
static void kill_all(uint32_t id) {
    quiesced = 1;
    long deadline = monotonic_ms() + KILL_WAIT_MS;
    for (long left = KILL_WAIT_MS; left > 0; left = deadline - monotonic_ms()) {
        signal_everything();
        reap_children();               /* EXIT for each exec, as usual */
        siginfo_t info;
        if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD) {
            send_ids(T_DONE, id, 0, 0, 1);
            return;
        }
        await_child_end(left < 10 ? (int) left : 10);
    }
    send_failed_errno(id, EBUSY, "processes of the sandbox were still alive 5 s after SIGKILL");
}

/* ---- MKDIR, REMOVE, RENAME */

static void make_directory(uint32_t id, char *path, uint32_t flags) {
    if (!is_absolute(id, path)) return;
    if ((flags & MKDIR_PARENTS) && make_parents(path) < 0) {
        fail_op(id, errno, "cannot create the parent directories");
        return;
    }
    if (mkdir(path, 0755) < 0) {
        int err = errno;
        struct stat st;
        /* With PARENTS an existing directory is fine, but not a symlink to one (lstat), nor a file. */
        int exists_as_dir = err == EEXIST && lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
        if (!(flags & MKDIR_PARENTS) || !exists_as_dir) {
            fail_op(id, err, NULL);
            return;
        }
    }
    send_ids(T_DONE, id, 0, 0, 1);
}

/* Where a recursive remove failed, for the message: the entry name, and whether it was too deep. */
static char remove_failed_at[NAME_MAX + 1];
static int remove_too_deep;

static int remove_entry(int dirfd, const char *name, int recursive, int depth);

/*
 * Removes everything inside directory `name` of `parent`. O_NOFOLLOW|O_DIRECTORY: if the code
 * swapped the directory for a symlink after unlinkat saw a directory, this fails instead of
 * emptying wherever the link points. Removing entries while reading a directory may make readdir
 * skip some, so a pass that removed something is followed by another.
 */
static int empty_directory(int parent, const char *name, int depth) {
    if (depth >= MAX_REMOVE_DEPTH) {
        remove_too_deep = 1;
        errno = ELOOP;
        return -1;
    }
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    DIR *dir = fd < 0 ? NULL : fdopendir(fd);
    if (dir == NULL) {
        int err = errno;
        if (fd >= 0) close(fd);
        errno = err;
        return -1;
    }
    int result = 0;
    for (int pass = 0, removed = 1; result == 0 && removed && pass < 3; pass++) {
        removed = 0;
        rewinddir(dir);
        struct dirent *entry;
        while (result == 0 && (errno = 0, entry = readdir(dir)) != NULL) {
            if (is_dot(entry->d_name)) continue;
            if (remove_entry(dirfd(dir), entry->d_name, 1, depth + 1) == 0) {
                removed = 1;
            } else if (errno != ENOENT) {          /* ENOENT: the code removed it first */
                result = -1;
                if (remove_failed_at[0] == '\0') {
                    snprintf(remove_failed_at, sizeof remove_failed_at, "%s", entry->d_name);
                }
            }
        }
        if (result == 0 && errno != 0) {
            result = -1;                           /* readdir failed */
        }
    }
    int err = errno;
    closedir(dir);
    errno = err;
    return result;
}

/* unlinkat never follows a symlink: a link is removed itself, whatever it points to. */
static int remove_entry(int dirfd, const char *name, int recursive, int depth) {
    if (unlinkat(dirfd, name, 0) == 0) {
        return 0;
    }
    if (errno != EISDIR) {             /* Linux answers EISDIR when unlinking a directory */
        return -1;
    }
    if (recursive && empty_directory(dirfd, name, depth) < 0) {
        return -1;
    }
    return unlinkat(dirfd, name, AT_REMOVEDIR);
}

/* Splits "/a/b/" into parent "/a" and name "b", in place. */
static const char *split_last(char *path, char **name) {
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') {
        path[--len] = '\0';
    }
    char *slash = strrchr(path, '/');
    *name = slash + 1;
    if (slash == path) {
        return "/";
    }
    *slash = '\0';
    return path;
}

static void remove_path(uint32_t id, char *path, uint32_t flags) {
    if (!is_absolute(id, path)) return;
    char *name;
    const char *parent = split_last(path, &name);
    if (name[0] == '\0' || is_dot(name)) {
        send_failed_errno(id, EINVAL, "refusing to remove '/', '.' or '..'");
        return;
    }
    int dirfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        fail_op(id, errno, "cannot open the parent directory");
        return;
    }
    remove_failed_at[0] = '\0';
    remove_too_deep = 0;
    int result = remove_entry(dirfd, name, flags & REMOVE_RECURSIVE, 0);
    int err = errno;
    close(dirfd);
    if (result == 0) {
        send_ids(T_DONE, id, 0, 0, 1);
    } else if (remove_too_deep) {
        send_failed_errno(id, ELOOP, "the tree is more than 128 directories deep");
    } else if (remove_failed_at[0] != '\0') {
        char step[MAX_MESSAGE / 2];
        snprintf(step, sizeof step, "cannot remove '%.200s' inside it", remove_failed_at);
        fail_op(id, err, step);
    } else {
        fail_op(id, err, NULL);
    }
}

/* rename() acts on the names themselves: a symlink at either end is moved or replaced, never followed. */
static void rename_path(uint32_t id, const char *from, const char *to) {
    if (!is_absolute(id, from) || !is_absolute(id, to)) return;
    if (rename(from, to) < 0) {
        fail_op(id, errno, NULL);
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

static uint64_t read_u64(struct reader *r) {
    uint64_t high = read_u32(r);
    return high << 32 | read_u32(r);
}

/* A path: non-empty and shorter than PATH_MAX. Relative paths are refused later, with FAILED. */
static char *read_path(struct reader *r, const char *frame) {
    char *path = read_string(r);
    if (path[0] == '\0' || strlen(path) >= PATH_MAX) die("malformed frame from host: bad %s path", frame);
    return path;
}

static uint32_t read_flags(struct reader *r, uint32_t known, const char *frame) {
    uint32_t flags = read_u32(r);
    if (flags & ~known) die("malformed frame from host: unknown %s flags %u", frame, flags);
    return flags;
}

static void expect_end(struct reader *r, const char *frame) {
    if (r->left != 0) die("malformed frame from host: trailing bytes after %s", frame);
}

struct mux_conn;
static struct mux_conn *port_find(uint32_t id);
static void port_open(uint32_t id, uint32_t port);
static void port_frame(int type, uint32_t id, const unsigned char *p, size_t len);
static void close_ports(void);

/* Ids of requests that outlive their frame (EXEC, READ_FILE, PORT_OPEN) must be unique among live ones. */
static void expect_new_id(uint32_t id) {
    if (find_exec(id) != NULL || find_read(id) != NULL || port_find(id) != NULL) die("malformed frame from host: id %u is already in use", id);
}

static void read_list(struct reader *r, char **list, const char *what) {
    uint32_t count = read_u32(r);
    if (count > MAX_STRINGS || count > r->left / 4) die("malformed frame from host: %s has too many entries", what);
    for (uint32_t i = 0; i < count; i++) {
        list[i] = read_string(r);
    }
    list[count] = NULL;
}

static int connect_to(const char *path);
static void close_bridges(void);

/*
 * ---- DETACH: let go of the host channel so the sandbox can be checkpointed (runsc checkpoint
 * cannot save a connected host socket), then connect again to the socket NAME in the channel's
 * directory: after the checkpoint (and after each restore) the host listens there. NAME is the
 * host's secret: the directory is not listable from inside, so only we, whose memory the code
 * cannot read (non-dumpable), know where to connect, and code racing us for the new channel does
 * not find it. Refused (EBUSY) while an execution or a file read is running: its frames would have
 * nowhere to go. Open egress connections are closed (their host ends cannot be saved either).
 *
 * Over a device (a microVM guest's virtio-serial port; NAME is then ignored) the port is kept: a
 * guest is saved whole, its port included. The agent reads nothing but RESUME on it afterwards
 * (await_resume), from the same host or from the host of a guest restored from the saved one.
 */
static void await_resume(void);

static void detach(uint32_t id, const char *name) {
    const char *slash = strrchr(control_path, '/');
    size_t dir_len = slash == NULL ? 0 : (size_t) (slash - control_path) + 1;
    size_t name_len = strlen(name);
    if (name_len == 0 || name_len > 64 || name[0] == '.' || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-._") != name_len) {
        die("malformed frame from host: DETACH socket name");
    }
    if (!sock_is_device && (dir_len + name_len >= sizeof detached_path || dir_len + name_len >= 108)) {
        send_failed_errno(id, ENAMETOOLONG, "the socket path would be too long");
        return;
    }
    for (int i = 0; i < MAX_EXECS; i++) {
        if (execs[i].used) {
            send_failed_errno(id, EBUSY, "an execution is still running: wait for it to end or kill it first");
            return;
        }
    }
    if (reads_active()) {
        send_failed_errno(id, EBUSY, "a file is still being read");
        return;
    }
    close_bridges();
    close_ports();
    forget_spare(&spare, 1);           /* its socket cannot be saved either */
    send_ids(T_DONE, id, 0, 0, 1);
    if (sock_is_device) {
        await_resume();
        send_ids(T_HELLO, PROTOCOL_VERSION, 0, 0, 1);
        return;
    }
    close(sock);
    sock = -1;
    in_have = 0;
    /* Nothing else can happen meanwhile: no execution runs, and the host's next step is to
     * checkpoint (which freezes us here) or to listen again. Children that end wait as zombies. */
    memcpy(detached_path, control_path, dir_len);
    memcpy(detached_path + dir_len, name, name_len + 1);
    for (;;) {
        int fd = connect_to(detached_path);
        if (fd >= 0) {
            sock = fd;
            break;
        }
        usleep(20 * 1000);
    }
    send_ids(T_HELLO, PROTOCOL_VERSION, 0, 0, 1);
}

/*
 * After a DETACH over a device: reads the port until a whole RESUME frame is in, and nothing else.
 * A port whose host end is not connected (the guest restored, its new host not yet there) reads end
 * of file at once: that is waited out, not taken as the end.
 */
static void await_resume(void) {
    in_have = 0;
    for (;;) {
        size_t want = in_have < 4 ? 4 : 4 + get_u32(in_frame);
        ssize_t n = read(sock, in_frame + in_have, want - in_have);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die("cannot read the host channel after DETACH: %s", strerror(errno));
        if (n == 0) {
            usleep(20 * 1000);
            continue;
        }
        in_have += (size_t) n;
        if (in_have == 4 && get_u32(in_frame) != 1) {
            die("malformed frame from host: only RESUME may follow DETACH");
        }
        if (in_have == 5) {
            if (in_frame[4] != T_RESUME) die("malformed frame from host: only RESUME may follow DETACH");
            in_have = 0;
            return;
        }
    }
}

/* The execution an EXEC describes after its id (and spare): argv, env, cwd and a terminal size or none. */
static void parse_exec(struct reader *r, char **cwd, uint32_t *rows, uint32_t *cols) {
    read_list(r, argv_buf, "argv");
    read_list(r, env_buf, "env");
    *cwd = read_string(r);
    *rows = *cols = 0;
    if (r->left == 8) {                /* on a pseudo-terminal of this size */
        *rows = read_u32(r);
        *cols = read_u32(r);
        if (*rows == 0 || *cols == 0 || *rows > MAX_TTY_SIZE || *cols > MAX_TTY_SIZE) die("malformed frame from host: terminal size %ux%u", *rows, *cols);
    }
    if (r->left != 0) die("malformed frame from host: trailing bytes after EXEC");
    if (argv_buf[0] == NULL || argv_buf[0][0] == '\0') die("malformed frame from host: empty argv");
    for (int i = 0; env_buf[i] != NULL; i++) {
        if (strchr(env_buf[i], '=') == NULL) die("malformed frame from host: env entry without '='");
    }
    if ((*cwd)[0] != '/') die("malformed frame from host: cwd is not absolute");
}

/*
 * The spare supervisor, forked by SPARE: waits, ignoring every signal it can, for the execution
 * the agent hands it (see hand_to_spare), then supervises it as a forked supervisor would. It
 * exits if the agent lets go of it unused.
 */
static _Noreturn void spare_main(int sock, unsigned char *shared) {
    self = getpid();
    is_init = 0;                       /* a die() here ends only what is below us */
    int keep[] = { sock };
    close_all_but(keep, 1);
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    for (int s = 1; s < NSIG; s++) {
        if (s != SIGCHLD) signal(s, SIG_IGN);
    }
    unsigned char length[4];
    struct iovec iov = { .iov_base = length, .iov_len = sizeof length };
    union {
        char buf[CMSG_SPACE(5 * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof control.buf };
    ssize_t n;
    do {
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    struct cmsghdr *c = n == (ssize_t) sizeof length ? CMSG_FIRSTHDR(&msg) : NULL;
    if (c == NULL || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(5 * sizeof(int))
            || get_u32(length) > MAX_FRAME) {
        _exit(0);                      /* the agent let go of us, or exits */
    }
    int fds[5];
    memcpy(fds, CMSG_DATA(c), sizeof fds);
    size_t len = get_u32(length);
    memcpy(in_frame, shared, len);
    munmap(shared, MAX_FRAME);
    close(sock);
    struct reader r = { in_frame, len, arena };
    char *cwd;
    uint32_t rows, cols;
    parse_exec(&r, &cwd, &rows, &cols);
    if (rows > 0) {                    /* the slave came three times: keep one */
        close(fds[1]);
        close(fds[2]);
        fds[1] = fds[2] = fds[0];
    }
    supervise(fds[0], fds[1], fds[2], fds[3], fds[4], -1, cwd, rows > 0);
}

/* Forks a spare supervisor into *made. Returns 0, or -1 with errno set and nothing left open. */
static int fork_spare(struct spare *made) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
        return -1;
    }
    unsigned char *shared = mmap(NULL, MAX_FRAME, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        int saved = errno;
        close(pair[0]);
        close(pair[1]);
        errno = saved;
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        spare_main(pair[1], shared);
    }
    int saved = errno;
    close(pair[1]);
    if (pid < 0) {
        close(pair[0]);
        munmap(shared, MAX_FRAME);
        errno = saved;
        return -1;
    }
    *made = (struct spare) { pid, pair[0], shared };
    return 0;
}

/* SPARE: forks the spare supervisor, unless one waits, and names it in FORKED, for the host to place. */
static void make_spare(uint32_t id) {
    if (quiesced) {
        send_failed(id, "the sandbox is being destroyed: no process may start in it");
        return;
    }
    if (spare.pid == 0 && fork_spare(&spare) < 0) {
        send_failed_errno(id, errno, "cannot fork a spare supervisor");
        return;
    }
    send_ids(T_FORKED, id, (uint32_t) spare.pid, 0, 2);
}

static void handle_frame(int type, const unsigned char *payload, size_t len) {
    struct reader r = { payload, len, arena };
    uint32_t id = read_u32(&r);
    switch (type) {
    case T_EXEC:
    case T_EXEC_HELD:
    case T_EXEC_SPARE: {
        expect_new_id(id);
        pid_t wanted = 0;              /* EXEC_SPARE: the spare the host placed */
        if (type == T_EXEC_SPARE) {
            uint32_t v = read_u32(&r);
            if (v == 0 || v > INT32_MAX) die("malformed frame from host: EXEC_SPARE of pid %u", v);
            wanted = (pid_t) v;
        }
        const unsigned char *spec = r.p;
        size_t spec_len = r.left;
        char *cwd;
        uint32_t rows, cols;
        parse_exec(&r, &cwd, &rows, &cols);
        start_exec(id, cwd, type == T_EXEC_HELD, rows, cols, wanted, spec, spec_len);
        break;
    }
    case T_SPARE:
        expect_end(&r, "SPARE");
        make_spare(id);
        break;
    case T_RELEASE: {
        uint32_t go_on = read_u32(&r);
        if (r.left != 0 || go_on > 1) die("malformed frame from host: bad RELEASE");
        struct exec *e = find_exec(id);
        if (e != NULL) {               /* unknown: it died before (FAILED was sent) */
            if (e->go_fd < 0) die("malformed frame from host: RELEASE for an execution that is not held");
            release_exec(e, (int) go_on);
        }
        break;
    }
    case T_RESIZE: {
        uint32_t rows = read_u32(&r), cols = read_u32(&r);
        if (r.left != 0 || rows == 0 || cols == 0 || rows > MAX_TTY_SIZE || cols > MAX_TTY_SIZE) die("malformed frame from host: bad RESIZE");
        struct exec *e = find_exec(id);
        if (e == NULL) {
            break;                     /* it exited */
        }
        if (!e->tty) die("malformed frame from host: RESIZE for an execution without a terminal");
        /* The kernel sends SIGWINCH to the terminal's foreground process group. */
        struct winsize size = { .ws_row = (unsigned short) rows, .ws_col = (unsigned short) cols };
        if (e->out_fd >= 0) ioctl(e->out_fd, TIOCSWINSZ, &size);
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
        if (e == NULL) {
            break;                     /* it exited: what it left running stays */
        }
        if (sig == SIGKILL) {
            kill_execution_tree(e->supervisor);
        } else if (e->pid > 0) {
            kill(-e->pid, (int) sig);  /* the command's process group (it leads its own session) */
        }
        break;
    }
    case T_WRITE_FILE: {
        char *path = read_path(&r, "WRITE_FILE");
        uint32_t mode = read_u32(&r);
        uint32_t flags = read_flags(&r, WRITE_APPEND, "WRITE_FILE");
        if (mode > 07777) die("malformed frame from host: bad WRITE_FILE mode");
        write_file(id, path, (mode_t) mode, flags, r.p, r.left);
        break;
    }
    case T_READ_FILE: {
        expect_new_id(id);
        char *path = read_path(&r, "READ_FILE");
        uint64_t max = read_u64(&r);
        uint32_t flags = read_flags(&r, READ_NOFOLLOW, "READ_FILE");
        expect_end(&r, "READ_FILE");
        start_read(id, path, max, flags);
        break;
    }
    case T_STAT: {
        char *path = read_path(&r, "STAT");
        expect_end(&r, "STAT");
        stat_path(id, path);
        break;
    }
    case T_LIST: {
        char *path = read_path(&r, "LIST");
        expect_end(&r, "LIST");
        list_dir(id, path);
        break;
    }
    case T_WALK: {
        char *path = read_path(&r, "WALK");
        uint32_t max_entries = read_u32(&r);
        uint32_t max_depth = read_u32(&r);
        expect_end(&r, "WALK");
        if (max_depth == 0 || max_depth > MAX_WALK_DEPTH) die("malformed frame from host: WALK depth %u", max_depth);
        walk_tree(id, path, max_entries, max_depth);
        break;
    }
    case T_KILL_ALL:
        expect_end(&r, "KILL_ALL");
        kill_all(id);
        break;
    case T_DETACH: {
        char *name = read_string(&r);
        expect_end(&r, "DETACH");
        detach(id, name);
        break;
    }
    case T_PORT_OPEN: {
        expect_new_id(id);
        uint32_t port = read_u32(&r);
        expect_end(&r, "PORT_OPEN");
        if (port == 0 || port > 65535) die("malformed frame from host: PORT_OPEN of port %u", port);
        port_open(id, port);
        break;
    }
    case T_PORT_DATA:
    case T_PORT_EOF:
    case T_PORT_RESET:
    case T_PORT_CREDIT:
        port_frame(type, id, r.p, r.left);
        break;
    case T_MKDIR: {
        char *path = read_path(&r, "MKDIR");
        uint32_t flags = read_flags(&r, MKDIR_PARENTS, "MKDIR");
        expect_end(&r, "MKDIR");
        make_directory(id, path, flags);
        break;
    }
    case T_REMOVE: {
        char *path = read_path(&r, "REMOVE");
        uint32_t flags = read_flags(&r, REMOVE_RECURSIVE, "REMOVE");
        expect_end(&r, "REMOVE");
        remove_path(id, path, flags);
        break;
    }
    case T_RENAME: {
        char *from = read_path(&r, "RENAME");
        char *to = read_path(&r, "RENAME");
        expect_end(&r, "RENAME");
        rename_path(id, from, to);
        break;
    }
    default:
        die("malformed frame from host: unknown type %d", type);
    }
}

/* Reads what the socket has (never blocks) and handles each frame once complete. */
static void read_control(void) {
    size_t want = in_have < 4 ? 4 : 4 + get_u32(in_frame);
    /* A device is read only once poll saw it readable (or hung up: then read returns 0 at once). */
    ssize_t n = sock_is_device ? read(sock, in_frame + in_have, want - in_have)
                               : recv(sock, in_frame + in_have, want - in_have, MSG_DONTWAIT);
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


/* ---------------------------------------------------------------- egress bridge
 *
 * Each accepted TCP connection (inside the sandbox) is paired with a fresh connection to the
 * host's egress socket. Direction 0 copies TCP -> host, direction 1 host -> TCP. A direction reads
 * only when its buffer is empty and writes while it is not: a slow peer therefore stops us reading
 * from the other (backpressure) instead of growing anything, and nothing here ever blocks, since
 * every descriptor is non-blocking. End of input in one direction is passed on as shutdown(SHUT_WR)
 * once its buffer has drained (half-close); the pair is closed when both directions have ended or
 * on any error.
 */
struct bridge {
    int used;
    int fd[2];                         /* fd[0]: TCP peer inside the sandbox; fd[1]: host socket */
    unsigned char *buf[2];             /* buf[d] holds bytes read from fd[d], for fd[1 - d] */
    size_t len[2], off[2];
    int eof[2];                        /* fd[d] has reached end of input */
    int shut[2];                       /* fd[1 - d] has been shut down for writing */
};

static struct bridge bridges[MAX_BRIDGES];
static int egress_listen[2] = { -1, -1 };  /* 127.0.0.1 and ::1 */
static const char *egress_socket = DEFAULT_EGRESS_SOCKET;

static void bridge_close(struct bridge *b) {
    for (int d = 0; d < 2; d++) {
        close_fd(&b->fd[d]);
        free(b->buf[d]);
        b->buf[d] = NULL;
    }
    b->used = 0;
}

/* Closes every egress connection (DETACH: a connected host socket cannot be checkpointed). */
static void close_bridges(void) {
    for (int i = 0; i < MAX_BRIDGES; i++) {
        if (bridges[i].used) bridge_close(&bridges[i]);
    }
}

/* Listens on 127.0.0.1:port and [::1]:port. The IPv4 listener is required; ::1 is best effort
 * (a kernel without IPv6 has none). */
static void egress_listen_on(int port) {
    struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t) port),
                               .sin6_addr = IN6ADDR_LOOPBACK_INIT };
    int one = 1;
    for (int i = 0; i < 2; i++) {
        int fd = socket(i == 0 ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd >= 0) {
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (i == 1) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        }
        int ok = fd >= 0
                && bind(fd, i == 0 ? (struct sockaddr *) &v4 : (struct sockaddr *) &v6, i == 0 ? sizeof v4 : sizeof v6) == 0
                && listen(fd, 64) == 0;
        if (!ok) {
            if (i == 0) {
                fprintf(stderr, "airlock-agent: cannot listen on 127.0.0.1:%d for egress: %s\n", port, strerror(errno));
                exit(1);
            }
            if (fd >= 0) close(fd);
            continue;
        }
        egress_listen[i] = fd;
    }
}

/* Accepts what is waiting (bounded per call) and pairs each with a host connection. */
static void egress_accept(int listener) {
    for (int k = 0; k < 16; k++) {
        int tcp = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (tcp < 0) {
            return;                    /* EAGAIN, or a connection that died before we took it */
        }
        struct bridge *b = NULL;
        for (int i = 0; i < MAX_BRIDGES && b == NULL; i++) {
            if (!bridges[i].used) b = &bridges[i];
        }
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        int host = -1;
        if (b != NULL && strlen(egress_socket) < sizeof addr.sun_path) {
            strcpy(addr.sun_path, egress_socket);
            host = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            /* A unix connect completes at once or fails (EAGAIN: the host's backlog is full). */
            if (host >= 0 && connect(host, (struct sockaddr *) &addr, sizeof addr) < 0) {
                close(host);
                host = -1;
            }
        }
        unsigned char *in = host >= 0 ? malloc(BRIDGE_BUF) : NULL;
        unsigned char *out = in != NULL ? malloc(BRIDGE_BUF) : NULL;
        if (out == NULL) {
            /* No slot, no host proxy, or no memory: the sandbox's client sees the connection close. */
            free(in);
            if (host >= 0) close(host);
            close(tcp);
            continue;
        }
        *b = (struct bridge) { .used = 1, .fd = { tcp, host }, .buf = { in, out } };
    }
}

/* Moves what it can for direction d of b. Returns -1 if the pair must be closed. */
static int bridge_pump(struct bridge *b, int d, short revents_src, short revents_dst) {
    int src = b->fd[d], dst = b->fd[1 - d];
    if (!b->eof[d] && b->len[d] == 0 && (revents_src & (POLLIN | POLLHUP | POLLERR))) {
        ssize_t n = read(src, b->buf[d], BRIDGE_BUF);
        if (n > 0) {
            b->len[d] = (size_t) n;
            b->off[d] = 0;
        } else if (n == 0) {
            b->eof[d] = 1;
        } else if (errno != EAGAIN && errno != EINTR) {
            return -1;
        }
    }
    if (b->len[d] > 0 && (revents_dst & (POLLOUT | POLLHUP | POLLERR))) {
        ssize_t n = send(dst, b->buf[d] + b->off[d], b->len[d], MSG_NOSIGNAL);
        if (n > 0) {
            b->off[d] += (size_t) n;
            b->len[d] -= (size_t) n;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            return -1;
        }
    }
    if (b->eof[d] && b->len[d] == 0 && !b->shut[d]) {
        shutdown(dst, SHUT_WR);
        b->shut[d] = 1;
    }
    return 0;
}

/* The poll events each side of b waits for now. */
static short bridge_events(const struct bridge *b, int side) {
    short ev = 0;
    if (!b->eof[side] && b->len[side] == 0) ev |= POLLIN;      /* room to read from this side */
    if (b->len[1 - side] > 0) ev |= POLLOUT;                  /* bytes waiting to be written to it */
    return ev;
}

/* ---------------------------------------------------------------- multiplexed streams
 *
 * Two kinds of TCP connection inside the sandbox travel as frames over one channel to the host,
 * with the same frames and the same credits (docs/agent-protocol.md):
 *
 * - egress, with --egress-device: the agent bridges to the host over a second character device
 *   (the microVM's virtio-serial port "airlock-egress") instead of a unix socket per connection,
 *   since a guest has no socket the host can reach. Each connection the agent accepts gets a fresh
 *   id (never reused while the device is open) and travels as
 *     u32 N (of what follows), u8 type, u32 connection id, payload
 *   OPEN (guest->host, no payload), DATA (1 to MUX_CHUNK bytes), EOF (no more bytes in this
 *   direction: half-close), RESET (the connection is gone, both directions), CREDIT (u32 bytes).
 * - port streams, inbound: the host asks with PORT_OPEN (id chosen by the host) for a connection
 *   to 127.0.0.1:port, which the agent makes without blocking and answers with DONE or FAILED;
 *   its bytes then travel as control frames of type T_PORT_BASE + the frame type above, whose
 *   payload (u32 id, then the rest) is laid out as the egress device's. At most MAX_PORTS.
 *
 * Each direction of each connection is bounded by credits: a sender starts with MUX_WINDOW bytes
 * and may send DATA only up to what it has left; the receiver returns CREDIT as it writes the
 * bytes on to their destination. So the agent holds at most MUX_WINDOW bytes per connection from
 * the host, and the host as much from the agent, whatever the peers at either end do. Frames for
 * an id that is not live (closed by a RESET that crossed them) are ignored.
 */
enum { MUX_OPEN = 1, MUX_DATA = 2, MUX_EOF = 3, MUX_RESET = 4, MUX_CREDIT = 5 };
#define MUX_WINDOW (64 * 1024)
#define MUX_CHUNK (16 * 1024)
#define MUX_MAX_FRAME (1 + 4 + MUX_CHUNK)

struct mux_conn {
    int used;
    uint32_t id;
    int port;                          /* a port stream (frames on the control channel); 0 for egress */
    int connecting;                    /* a port stream whose connect has not completed: not answered yet */
    int fd;                            /* the TCP connection inside the sandbox */
    uint32_t credit;                   /* bytes we may still send the host */
    unsigned char *buf;                /* bytes from the host for fd: at most MUX_WINDOW */
    size_t len, off;
    int eof_in;                        /* fd has reached end of input (EOF sent) */
    int eof_host;                      /* the host sent EOF: shut fd for writing once buf drains */
    int shut;                          /* fd has been shut down for writing */
};

static struct mux_conn mux_conns[MAX_BRIDGES];
static struct mux_conn port_conns[MAX_PORTS];
static const char *egress_device;     /* --egress-device: multiplex over it rather than splice to egress_socket */
static int mux_fd = -1;
static uint32_t mux_next_id = 1;
static unsigned char mux_in[4 + MUX_MAX_FRAME];
static size_t mux_in_have;
static unsigned char mux_out[4 + MUX_MAX_FRAME];

/* Writes one frame whole. Blocking: the host reads this device at all times (it never waits on
 * anything before it reads the next frame), so a write waits only for QEMU and the host's reader. */
static void mux_send(int type, uint32_t id, const void *payload, size_t len) {
    put_u32(mux_out, (uint32_t) (1 + 4 + len));
    mux_out[4] = (unsigned char) type;
    put_u32(mux_out + 5, id);
    if (len > 0) memcpy(mux_out + 9, payload, len);
    size_t total = 9 + len, sent = 0;
    while (sent < total) {
        ssize_t n = write(mux_fd, mux_out + sent, total - sent);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) die("");           /* the host hung up the egress port: as for the control channel */
        sent += (size_t) n;
    }
}

/* One frame of c's: on the egress device, or on the control channel for a port stream (which the
 * host reads at all times too, as the device). */
static void conn_send(const struct mux_conn *c, int type, const void *payload, size_t len) {
    if (!c->port) {
        mux_send(type, c->id, payload, len);
        return;
    }
    put_u32(out_frame + 5, c->id);
    if (len > 0) memcpy(out_frame + 9, payload, len);
    send_frame(T_PORT_BASE + type, 4 + len);
}

static void conn_send_u32(const struct mux_conn *c, int type, uint32_t v) {
    unsigned char p[4];
    put_u32(p, v);
    conn_send(c, type, p, 4);
}

static void mux_close(struct mux_conn *c) {
    close_fd(&c->fd);
    free(c->buf);
    c->buf = NULL;
    c->used = 0;
}

static struct mux_conn *conn_find(struct mux_conn *table, int size, uint32_t id) {
    for (int i = 0; i < size; i++) {
        if (table[i].used && table[i].id == id) return &table[i];
    }
    return NULL;
}

static struct mux_conn *mux_find(uint32_t id) {
    return conn_find(mux_conns, MAX_BRIDGES, id);
}

static struct mux_conn *port_find(uint32_t id) {
    return conn_find(port_conns, MAX_PORTS, id);
}

/* Accepts what is waiting (bounded per call); each connection is announced to the host by OPEN. */
static void mux_accept(int listener) {
    for (int k = 0; k < 16; k++) {
        int tcp = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (tcp < 0) return;
        struct mux_conn *c = NULL;
        for (int i = 0; i < MAX_BRIDGES && c == NULL; i++) {
            if (!mux_conns[i].used) c = &mux_conns[i];
        }
        unsigned char *buf = c != NULL && mux_next_id != 0 ? malloc(MUX_WINDOW) : NULL;
        if (buf == NULL) {
            close(tcp);                /* no slot, ids used up, or no memory: the client sees the close */
            continue;
        }
        *c = (struct mux_conn) { .used = 1, .id = mux_next_id++, .fd = tcp, .credit = MUX_WINDOW, .buf = buf };
        mux_send(MUX_OPEN, c->id, NULL, 0);
    }
}

/* PORT_OPEN's FAILED for a port stream, which is then gone. */
static void port_fail(struct mux_conn *c, int err, uint32_t port) {
    char message[128];
    if (err == ECONNREFUSED) {
        snprintf(message, sizeof message, "nothing listens on 127.0.0.1:%u", port);
    } else {
        snprintf(message, sizeof message, "cannot connect to 127.0.0.1:%u: %s", port, strerror(err));
    }
    send_failed_errno(c->id, err, message);
    mux_close(c);
}

/* PORT_OPEN: a TCP connection to 127.0.0.1:port, begun without blocking; DONE or FAILED answers it
 * once it is made or failed (at once, or when poll sees the socket writable). */
static void port_open(uint32_t id, uint32_t port) {
    struct mux_conn *c = NULL;
    for (int i = 0; i < MAX_PORTS && c == NULL; i++) {
        if (!port_conns[i].used) c = &port_conns[i];
    }
    if (c == NULL) {
        char message[96];
        snprintf(message, sizeof message, "%d port connections are open already, the most at once: close one first", MAX_PORTS);
        send_failed_errno(id, EMFILE, message);
        return;
    }
    *c = (struct mux_conn) { .used = 1, .id = id, .port = (int) port, .fd = -1, .credit = MUX_WINDOW };
    c->buf = malloc(MUX_WINDOW);
    if (c->buf == NULL) {
        port_fail(c, ENOMEM, port);
        return;
    }
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        port_fail(c, errno, port);
        return;
    }
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (connect(c->fd, (struct sockaddr *) &to, sizeof to) == 0) {
        send_ids(T_DONE, id, 0, 0, 1);
    } else if (errno == EINPROGRESS || errno == EINTR) {
        c->connecting = 1;             /* poll waits for POLLOUT; mux_pump answers */
    } else {
        port_fail(c, errno, port);
    }
}

/* Moves what it can between c's TCP connection and the host; closes c (with RESET) on an error. */
static void mux_pump(struct mux_conn *c, short revents) {
    if (c->connecting) {
        if (!(revents & (POLLOUT | POLLHUP | POLLERR))) return;
        int err = 0;
        socklen_t err_len = sizeof err;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &err_len) < 0) err = errno;
        if (err != 0) {
            port_fail(c, err, (uint32_t) c->port);
            return;
        }
        c->connecting = 0;
        send_ids(T_DONE, c->id, 0, 0, 1);
        revents = POLLOUT;             /* writable: pass on what the host may have sent meanwhile (its EOF too) */
    }
    if (!c->eof_in && c->credit > 0 && (revents & (POLLIN | POLLHUP | POLLERR))) {
        unsigned char data[MUX_CHUNK];
        size_t want = c->credit < MUX_CHUNK ? c->credit : MUX_CHUNK;
        ssize_t n = read(c->fd, data, want);
        if (n > 0) {
            c->credit -= (uint32_t) n;
            conn_send(c, MUX_DATA, data, (size_t) n);
        } else if (n == 0) {
            c->eof_in = 1;
            conn_send(c, MUX_EOF, NULL, 0);
        } else if (errno != EAGAIN && errno != EINTR) {
            conn_send(c, MUX_RESET, NULL, 0);
            mux_close(c);
            return;
        }
    }
    if (c->len > 0 && (revents & (POLLOUT | POLLHUP | POLLERR))) {
        ssize_t n = send(c->fd, c->buf + c->off, c->len, MSG_NOSIGNAL);
        if (n > 0) {
            c->off += (size_t) n;
            c->len -= (size_t) n;
            if (c->len == 0) c->off = 0;
            conn_send_u32(c, MUX_CREDIT, (uint32_t) n);
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            conn_send(c, MUX_RESET, NULL, 0);
            mux_close(c);
            return;
        }
    }
    if (c->eof_host && c->len == 0 && !c->shut) {
        shutdown(c->fd, SHUT_WR);
        c->shut = 1;
    }
    if (c->eof_in && c->shut) {
        mux_close(c);                  /* both directions ended: the host closes its side on its own */
    }
}

static short mux_events(const struct mux_conn *c) {
    if (c->connecting) return POLLOUT;
    short ev = 0;
    if (!c->eof_in && c->credit > 0) ev |= POLLIN;
    if (c->len > 0) ev |= POLLOUT;
    return ev;
}

/* One frame from the host for connection c (NULL: not live, ignored once its shape is checked).
 * A malformed one (bad length, unknown type, DATA beyond the credit we gave) ends the agent, as on
 * the control channel: the host is broken or not the host. `what` names the channel for that. */
static void conn_handle(struct mux_conn *c, int type, const unsigned char *p, size_t len, const char *what) {
    switch (type) {
    case MUX_DATA:
        if (len == 0 || len > MUX_CHUNK) die("%s DATA of %zu bytes", what, len);
        if (c == NULL) return;         /* reset meanwhile */
        if (c->eof_host || c->len + len > MUX_WINDOW) die("%s DATA beyond the credit given, or after EOF", what);
        if (c->off + c->len + len > MUX_WINDOW) {
            memmove(c->buf, c->buf + c->off, c->len);
            c->off = 0;
        }
        memcpy(c->buf + c->off + c->len, p, len);
        c->len += len;
        return;
    case MUX_EOF:
        if (len != 0) die("%s EOF with a payload", what);
        if (c == NULL) return;
        if (c->eof_host) die("%s EOF after EOF", what);
        c->eof_host = 1;
        if (!c->connecting) mux_pump(c, 0);
        return;
    case MUX_RESET:
        if (len != 0) die("%s RESET with a payload", what);
        if (c == NULL) return;
        /* A port stream not answered yet gets its answer still: every PORT_OPEN gets one. */
        if (c->connecting) send_failed_errno(c->id, ECANCELED, "the host gave up the connection attempt");
        mux_close(c);
        return;
    case MUX_CREDIT:
        if (len != 4) die("%s CREDIT of %zu bytes", what, len);
        if (c == NULL) return;
        uint32_t more = get_u32(p);
        if (more == 0 || (uint64_t) c->credit + more > MUX_WINDOW) die("%s CREDIT beyond the window", what);
        c->credit += more;
        return;
    default:
        die("unknown %s frame type %d", what, type);
    }
}

/* One frame from the egress device: u8 type, u32 id, payload. */
static void mux_handle(const unsigned char *f, size_t n) {
    if (n < 5) die("egress frame too short");
    conn_handle(mux_find(get_u32(f + 1)), f[0], f + 5, n - 5, "egress");
}

/* PORT_DATA, PORT_EOF, PORT_RESET or PORT_CREDIT from the control channel, after its id. */
static void port_frame(int type, uint32_t id, const unsigned char *p, size_t len) {
    conn_handle(port_find(id), type - T_PORT_BASE, p, len, "malformed frame from host: port");
}

/* Closes every port stream without a word (DETACH: the host's ends go with the channel). */
static void close_ports(void) {
    for (int i = 0; i < MAX_PORTS; i++) {
        if (port_conns[i].used) mux_close(&port_conns[i]);
    }
}

/* Reads what the host sent on the egress device, frame by frame; never waits for a whole frame. */
static void mux_read(void) {
    size_t want = mux_in_have < 4 ? 4 - mux_in_have : 4 + get_u32(mux_in) - mux_in_have;
    ssize_t n = read(mux_fd, mux_in + mux_in_have, want);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) die("");
    if (n < 0) return;
    mux_in_have += (size_t) n;
    if (mux_in_have == 4) {
        uint32_t len = get_u32(mux_in);
        if (len < 5 || len > MUX_MAX_FRAME) die("egress frame length %u", len);
    }
    if (mux_in_have >= 4 && mux_in_have == 4 + get_u32(mux_in)) {
        mux_handle(mux_in + 4, mux_in_have - 4);
        mux_in_have = 0;
    }
}

/* ---------------------------------------------------------------- main loop */

/* Opens the host channel: a character device is opened for reading and writing, anything else is
 * a unix socket to connect to. */
static int connect_to(const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISCHR(st.st_mode)) {
        sock_is_device = 1;
        return open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
    }
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

/* Parses a positive limit for --nofile or --fsize; 0 when it is not one. */
static rlim_t parse_limit(const char *s) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    return (errno != 0 || *end != '\0' || s[0] == '-' || v == 0) ? 0 : (rlim_t) v;
}

/*
 * The sandbox's rlimits, set by us before anything else runs: the runtime cannot set them from
 * outside once the user namespace is not owned by host root (the driver creates it as the
 * sandbox's own host uid). Lowering needs no privilege; nothing in the sandbox can raise them back.
 */
static void apply_limit(int resource, const char *name, rlim_t value) {
    struct rlimit l = { value, value };
    if (setrlimit(resource, &l) < 0) {
        fprintf(stderr, "airlock-agent: cannot set %s to %llu: %s\n", name, (unsigned long long) value, strerror(errno));
        exit(1);
    }
}

/*
 * --hold-user-namespace UID: not the agent, but the host-side step before a sandbox starts (run by
 * the driver as root, on the host). Becomes host uid UID, creates a user namespace, says 'R' on
 * stdout and holds the namespace until stdin closes; meanwhile the driver writes its id maps and
 * the runtime joins it. The kernel charges per-user budgets (inotify instances and watches, user
 * namespaces) up the namespace chain to its creator: created as UID, one of the sandbox's own host
 * ids, they are the sandbox's own instead of host root's, shared by all.
 */
static int hold_user_namespace(const char *uid_arg) {
    char *end;
    errno = 0;
    unsigned long v = strtoul(uid_arg, &end, 10);
    if (errno != 0 || *end != '\0' || uid_arg[0] == '-' || v == 0 || v >= (unsigned long) (uid_t) -1) {
        fputs("airlock-agent: --hold-user-namespace needs a host uid above 0\n", stderr);
        return 2;
    }
    uid_t uid = (uid_t) v;
    if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0) {
        fprintf(stderr, "airlock-agent: cannot become host uid %lu: %s\n", v, strerror(errno));
        return 1;
    }
    /* Changing uid made us non-dumpable; the driver (root) must open our /proc/PID/ns/user and maps. */
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    /* No PR_SET_PDEATHSIG: it follows the spawning thread, not the driver. If the driver dies, its
     * end of our stdin closes, and we exit. */
    if (unshare(CLONE_NEWUSER) < 0) {
        fprintf(stderr, "airlock-agent: cannot create a user namespace as host uid %lu: %s\n", v, strerror(errno));
        return 1;
    }
    if (write(1, "R", 1) != 1) {
        return 1;
    }
    char byte;
    for (;;) {
        ssize_t n = read(0, &byte, 1);
        if (n == 0 || (n < 0 && errno != EINTR)) {
            return 0;
        }
    }
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--hold-user-namespace") == 0) {
        return hold_user_namespace(argv[2]);
    }
    int egress_port = 0;
    rlim_t nofile = 0, fsize = 0;
    int arg = 1;
    while (arg + 1 < argc && strncmp(argv[arg], "--", 2) == 0) {
        if (strcmp(argv[arg], "--nofile") == 0 || strcmp(argv[arg], "--fsize") == 0) {
            rlim_t v = parse_limit(argv[arg + 1]);
            if (v == 0) {
                fprintf(stderr, "airlock-agent: %s needs a positive number\n", argv[arg]);
                return 2;
            }
            *(argv[arg][2] == 'n' ? &nofile : &fsize) = v;
        } else if (strcmp(argv[arg], "--egress-port") == 0) {
            char *end;
            long p = strtol(argv[arg + 1], &end, 10);
            if (*end != '\0' || p < 1 || p > 65535) {
                fputs("airlock-agent: --egress-port needs a port between 1 and 65535\n", stderr);
                return 2;
            }
            egress_port = (int) p;
        } else if (strcmp(argv[arg], "--egress-socket") == 0) {
            egress_socket = argv[arg + 1];
        } else if (strcmp(argv[arg], "--egress-device") == 0) {
            egress_device = argv[arg + 1];
        } else {
            break;
        }
        arg += 2;
    }
    if (arg != argc - 1) {
        fputs("usage: airlock-agent [--nofile N] [--fsize BYTES] [--egress-port PORT [--egress-socket PATH | --egress-device PATH]] <socket path | device>\n", stderr);
        return 2;
    }
    if (nofile != 0) apply_limit(RLIMIT_NOFILE, "RLIMIT_NOFILE", nofile);
    if (fsize != 0) apply_limit(RLIMIT_FSIZE, "RLIMIT_FSIZE", fsize);
    apply_limit(RLIMIT_CORE, "RLIMIT_CORE", 0);
    control_path = argv[arg];
    /* Sandboxed code runs as our user: without this it could ptrace us or read /proc/1/fd. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    self = getpid();
    is_init = self == 1;
    if (!is_init) {
        /* Outside a pid namespace, adopt orphans ourselves, as PID 1 would, so they are reaped
         * here and their process groups stay reserved until we kill them. */
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    /* Keep 0-2 occupied so no pipe we create lands there and gets clobbered by dup2 in a child. */
    for (int fd = open("/dev/null", O_RDWR); fd >= 0; fd = open("/dev/null", O_RDWR)) {
        if (fd > 2) {
            close(fd);   /* 0-2 are taken now; this one would leak into every child */
            break;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    /* Under an RLIMIT_FSIZE set for the sandbox, a big WRITE_FILE must fail with EFBIG, not kill
     * us. Children get default dispositions back before exec. */
    signal(SIGXFSZ, SIG_IGN);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sigfd < 0) {
        perror("airlock-agent: signalfd");
        return 1;
    }
    sigchld_fd = sigfd;
    if (egress_port != 0) {
        /* Before HELLO, so the host knows the port is taken by us once the sandbox is up. */
        egress_listen_on(egress_port);
        if (egress_device != NULL && (mux_fd = open(egress_device, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
            fprintf(stderr, "airlock-agent: cannot open the egress device %s: %s\n", egress_device, strerror(errno));
            return 1;
        }
    }
    sock = connect_to(control_path);
    if (sock < 0) {
        fprintf(stderr, "airlock-agent: cannot connect to %s: %s\n", control_path, strerror(errno));
        return 1;
    }
    send_ids(T_HELLO, PROTOCOL_VERSION, 0, 0, 1);

    enum { MAX_FDS = 2 + 4 * MAX_EXECS + 2 * MAX_BRIDGES + MAX_BRIDGES + MAX_PORTS + 1 + 2 };
    struct pollfd fds[MAX_FDS];
    struct { struct exec *e; int kind; struct bridge *b; int side; struct mux_conn *c; } owner[MAX_FDS];
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
            /* Last of the exec's entries: its exit drains the others and frees the slot. A held
             * exec's pipe is read by await_exec, after RELEASE. */
            if (e->status_fd >= 0 && e->go_fd < 0) { owner[n].e = e; owner[n].kind = T_EXIT; fds[n++] = (struct pollfd) { .fd = e->status_fd, .events = POLLIN }; }
        }
        int n_exec = n;
        for (int i = 0; i < MAX_BRIDGES; i++) {
            struct bridge *b = &bridges[i];
            if (!b->used) continue;
            for (int side = 0; side < 2; side++) {
                owner[n].b = b; owner[n].side = side;
                /* A side we wait for nothing on is left out (fd -1): poll would still report a
                 * hang-up on it, at once and forever, and the loop would spin. */
                short ev = bridge_events(b, side);
                fds[n++] = (struct pollfd) { .fd = ev ? b->fd[side] : -1, .events = ev };
            }
        }
        int n_splice = n;
        /* Multiplexed connections (with --egress-device; the bridges above are then unused). */
        for (int i = 0; i < MAX_BRIDGES; i++) {
            struct mux_conn *c = &mux_conns[i];
            if (!c->used) continue;
            short ev = mux_events(c);
            owner[n].c = c;
            fds[n++] = (struct pollfd) { .fd = ev ? c->fd : -1, .events = ev };
        }
        /* Port streams: the same, with frames on the control channel. */
        for (int i = 0; i < MAX_PORTS; i++) {
            struct mux_conn *c = &port_conns[i];
            if (!c->used) continue;
            short ev = mux_events(c);
            owner[n].c = c;
            fds[n++] = (struct pollfd) { .fd = ev ? c->fd : -1, .events = ev };
        }
        int n_mux = n;
        if (mux_fd >= 0) fds[n++] = (struct pollfd) { .fd = mux_fd, .events = POLLIN };
        int n_bridge = n;
        for (int i = 0; i < 2; i++) {
            if (egress_listen[i] >= 0) fds[n++] = (struct pollfd) { .fd = egress_listen[i], .events = POLLIN };
        }
        /* While files are being read, do not sleep: each iteration sends one chunk of each. */
        if (poll(fds, (nfds_t) n, reads_active() ? 0 : -1) < 0) {
            if (errno == EINTR) continue;
            die("poll: %s", strerror(errno));
        }
        /* Output first, then exits: an exit drains the rest of the output before EXIT, and
         * fds[] entries of a finished exec must not be used after its slot is freed. */
        for (int i = 2; i < n_exec; i++) {
            struct exec *e = owner[i].e;
            if (fds[i].revents == 0 || !e->used) continue;
            if (owner[i].kind == T_STDOUT && e->out_fd == fds[i].fd) forward_output(e, &e->out_fd, T_STDOUT);
            else if (owner[i].kind == T_STDERR && e->err_fd == fds[i].fd) forward_output(e, &e->err_fd, T_STDERR);
            else if (owner[i].kind == T_STDIN && e->in_fd == fds[i].fd) {
                if (fds[i].revents & (POLLERR | POLLHUP)) close_stdin(e);
                else flush_stdin(e);
            }
            else if (owner[i].kind == T_EXIT && e->status_fd == fds[i].fd) on_status(e);
        }
        /* Bridges come in pairs of entries (side 0, side 1) for the same pair of descriptors. */
        for (int i = n_exec; i + 1 < n_splice; i += 2) {
            struct bridge *b = owner[i].b;
            if (!b->used || (fds[i].revents == 0 && fds[i + 1].revents == 0)) continue;
            short r0 = fds[i].revents, r1 = fds[i + 1].revents;
            /* An error or hang-up makes the next read or send fail or see the end, so the pair
             * closes through bridge_pump; a pair whose both directions have ended closes here. */
            if (bridge_pump(b, 0, r0, r1) < 0 || bridge_pump(b, 1, r1, r0) < 0
                    || (b->shut[0] && b->shut[1]) || ((r0 | r1) & POLLNVAL)) {
                bridge_close(b);
            }
        }
        for (int i = n_splice; i < n_mux; i++) {
            struct mux_conn *c = owner[i].c;
            if (c->used && fds[i].fd == c->fd && fds[i].revents) mux_pump(c, fds[i].revents);
        }
        /* The host's frames after the connections' own events: a RESET may close one. */
        if (n_mux < n_bridge && (fds[n_mux].revents & POLLIN)) {
            mux_read();
        } else if (n_mux < n_bridge && fds[n_mux].revents) {
            die("");                   /* the host hung up the egress port */
        }
        /* Accept last: a new pair may reuse descriptor numbers of one closed just above. */
        for (int i = n_bridge; i < n; i++) {
            if (fds[i].revents) {
                if (mux_fd >= 0) mux_accept(fds[i].fd);
                else egress_accept(fds[i].fd);
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
        pump_reads();
    }
}
