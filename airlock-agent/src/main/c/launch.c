/*
 * airlock-launch: Airlock's own runtime for the container tier (runtime "airlock"). See Launcher.java.
 *
 * Runs as host root, once per sandbox ("run SPEC", or a fork of "serve", which a host process keeps
 * for all its starts), and starts the sandbox's first process (the agent) the way runc does from
 * the same bundle, in one process and no helper: the host (Java) has already made
 * the sandbox's cgroups, set their limits, and turned the bundle's config.json into a plain spec
 * file (one setting a line, fields split by tabs). This program then
 *
 *   1. as host root: reads the spec and the compiled seccomp filter, opens the log and every cgroup
 *      the spec names, and has a child of its own running as the sandbox's host uid make the
 *      sandbox's user namespace, whose id maps it writes (make_user_namespace);
 *   2. joins the user namespace and unshares mount, network, IPC, UTS and pid namespaces (all owned
 *      by that user namespace), forks the sandbox's PID 1 and moves it into the cgroups while it
 *      sets up (the one host-side move a start needs); PID 1 makes its cgroup namespace once placed;
 *   3. in PID 1: brings up the loopback, sets the host name, binds the read-only root onto itself,
 *      mounts every mount of the spec inside it, binds the harmless devices into /dev with the usual
 *      links, pivots into it, masks and write-protects what the spec says in /proc and /sys, makes
 *      the root read-only, sets rlimits, empties the capability bounding set, becomes the
 *      unprivileged sandbox user with no supplementary group and no capability, sets no_new_privs,
 *      installs the seccomp filter, and executes the agent;
 *   4. prints PID 1's host pid on stdout once the agent is executing (the exec closes a pipe),
 *      after the request's tag under "serve", and exits: the sandbox runs on, as under
 *      "runc run --detach".
 *
 * A failure at any step is printed on stderr (the log) and ends with exit status 1; what it made
 * is the host's to remove (its cgroups; the namespaces go with their last process).
 *
 * Spec lines (the first field names the line; paths are absolute):
 *   log PATH | idmap HOST-ID COUNT | network new|host | cgroup DIR | rootfs PATH | hostname NAME | seccomp PATH
 *   mount SOURCE DEST TYPE FLAGS DATA RECURSIVE-ATTRS    (FLAGS, ATTRS decimal; DATA may be empty)
 *   device HOST-PATH DEST | symlink TARGET LINK | mask PATH | readonly PATH
 *   rlimit RESOURCE SOFT HARD | user UID GID | cwd PATH | env NAME=VALUE | arg WORD
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_LINES 512
#define MAX_FIELDS 7
#define MAX_SPEC_BYTES (1 << 20)
#define MAX_FILTER_INSNS 4096

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOUNT_ATTR_NOSUID
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef SYS_pivot_root
#define SYS_pivot_root 155
#endif

struct mount_attr_arg {
    uint64_t attr_set;
    uint64_t attr_clr;
    uint64_t propagation;
    uint64_t userns_fd;
};

struct line {
    char *field[MAX_FIELDS];
    int count;
};

static struct line lines[MAX_LINES];
static int line_count;
/* For each bind mount line: a detached copy of its source, made as host root (see clone_bind_sources). */
static int bind_fds[MAX_LINES];
/* Where a failure is written: stderr before PID 1 exists, the error pipe in PID 1. */
static int error_fd = 2;

static _Noreturn void fail(const char *fmt, ...) {
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(message, sizeof message - 1, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if (n > (int) sizeof message - 2) n = (int) sizeof message - 2;
    message[n++] = '\n';
    dprintf(error_fd, "airlock-launch: ");
    if (write(error_fd, message, (size_t) n) < 0) {
        /* nothing more to say it with */
    }
    _exit(1);
}

#define CHECK(ok, ...) do { if (!(ok)) fail(__VA_ARGS__); } while (0)

static void read_spec(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0, "cannot open the spec %s: %s", path, strerror(errno));
    static char buf[MAX_SPEC_BYTES + 1];
    size_t size = 0;
    ssize_t n;
    while (size < MAX_SPEC_BYTES && (n = read(fd, buf + size, MAX_SPEC_BYTES - size)) > 0) {
        size += (size_t) n;
    }
    CHECK(size < MAX_SPEC_BYTES, "the spec %s is over %d bytes", path, MAX_SPEC_BYTES);
    close(fd);
    buf[size] = '\0';
    for (char *p = buf, *end; *p != '\0'; p = end + 1) {
        end = strchr(p, '\n');
        CHECK(end != NULL, "the spec's last line has no newline");
        *end = '\0';
        if (*p == '\0') continue;
        CHECK(line_count < MAX_LINES, "the spec has over %d lines", MAX_LINES);
        struct line *l = &lines[line_count++];
        for (char *f = p;; ) {
            CHECK(l->count < MAX_FIELDS, "spec line '%s' has over %d fields", p, MAX_FIELDS);
            l->field[l->count++] = f;
            char *tab = strchr(f, '\t');
            if (tab == NULL) break;
            *tab = '\0';
            f = tab + 1;
        }
    }
}

/* The value of the first line named key (its field 1), or NULL. */
static const char *first(const char *key) {
    for (int i = 0; i < line_count; i++) {
        if (strcmp(lines[i].field[0], key) == 0 && lines[i].count >= 2) return lines[i].field[1];
    }
    return NULL;
}

static const char *required(const char *key) {
    const char *v = first(key);
    CHECK(v != NULL, "the spec has no %s line", key);
    return v;
}

static unsigned long long number(const char *text, const char *what) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    CHECK(errno == 0 && end != text && *end == '\0', "%s '%s' is not a number", what, text);
    return v;
}

static void need_fields(const struct line *l, int n) {
    CHECK(l->count == n, "spec line '%s' has %d fields, not %d", l->field[0], l->count, n);
}

static struct sock_filter filter[MAX_FILTER_INSNS];
static struct sock_fprog filter_program;

static void load_filter(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0, "cannot open the seccomp filter %s: %s", path, strerror(errno));
    size_t size = 0;
    ssize_t n;
    while (size < sizeof filter && (n = read(fd, (char *) filter + size, sizeof filter - size)) > 0) {
        size += (size_t) n;
    }
    char extra;
    CHECK(size > 0 && size % sizeof filter[0] == 0 && read(fd, &extra, 1) == 0,
          "%s is not a seccomp program of at most %d instructions (%zu bytes)", path, MAX_FILTER_INSNS, size);
    close(fd);
    filter_program.len = (unsigned short) (size / sizeof filter[0]);
    filter_program.filter = filter;
}

/* The flags a remount of the mount at path must keep: in a user namespace the kernel refuses to clear them. */
static unsigned long locked_flags(const char *path) {
    struct statvfs st;
    CHECK(statvfs(path, &st) == 0, "cannot look at the mount of %s: %s", path, strerror(errno));
    unsigned long flags = 0;
    if (st.f_flag & ST_NOSUID) flags |= MS_NOSUID;
    if (st.f_flag & ST_NODEV) flags |= MS_NODEV;
    if (st.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
    if (st.f_flag & ST_NOATIME) flags |= MS_NOATIME;
    if (st.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
    if (st.f_flag & ST_RELATIME) flags |= MS_RELATIME;
    if (st.f_flag & ST_RDONLY) flags |= MS_RDONLY;
    return flags;
}

/* Makes the bind mount at path read-only (and whatever else flags says), keeping its locked flags. */
static void remount_bind(const char *path, unsigned long flags) {
    unsigned long keep = locked_flags(path);
    CHECK(mount(NULL, path, NULL, MS_BIND | MS_REMOUNT | keep | flags, NULL) == 0,
          "cannot remount %s (flags 0x%lx): %s", path, keep | flags, strerror(errno));
}

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#define RESOLVE_NO_MAGICLINKS_ 0x02
#define RESOLVE_IN_ROOT_ 0x10
#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif

struct open_how_arg {
    uint64_t flags;
    uint64_t mode;
    uint64_t resolve;
};

/* PID 1's end of the pipe on which the launcher says it has moved PID 1 into the sandbox's cgroups. */
static int placed_fd = -1;

/* The new root, open, once it is bound onto itself: every destination is resolved inside it. */
static int root_fd = -1;

static int open_in_root(const char *path, int flags) {
    struct open_how_arg how = { .flags = (uint64_t) (flags | O_CLOEXEC), .resolve = RESOLVE_IN_ROOT_ | RESOLVE_NO_MAGICLINKS_ };
    return (int) syscall(SYS_openat2, root_fd, path[0] == '/' ? path + 1 : path, &how, sizeof how);
}

/*
 * The destination dest inside the new root, as an O_PATH descriptor: a symbolic link on the way
 * (an image may hold any) resolves as it would inside the sandbox, never out to the host, as runc
 * resolves its destinations. A destination that does not exist (inside a tmpfs this made, as
 * /dev/pts) is made first: a directory, or with file set, an empty file to bind a file onto.
 */
static int destination(const char *dest, int file) {
    int fd = open_in_root(dest, O_PATH);
    if (fd >= 0 || errno != ENOENT) {
        CHECK(fd >= 0, "cannot find mount point %s: %s", dest, strerror(errno));
        return fd;
    }
    char parent[4096];
    CHECK(snprintf(parent, sizeof parent, "%s", dest) < (int) sizeof parent, "mount point %s is too long", dest);
    char *slash = strrchr(parent, '/');
    CHECK(slash != NULL && slash[1] != '\0', "mount point %s is not an absolute path", dest);
    const char *name = dest + (slash - parent) + 1;
    *slash = '\0';
    int dir = open_in_root(parent[0] == '\0' ? "/" : parent, O_PATH | O_DIRECTORY);
    CHECK(dir >= 0, "cannot find the directory of mount point %s: %s", dest, strerror(errno));
    if (file) {
        int made = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        CHECK(made >= 0, "cannot make mount point %s: %s", dest, strerror(errno));
        close(made);
    } else {
        CHECK(mkdirat(dir, name, 0755) == 0, "cannot make mount point %s: %s", dest, strerror(errno));
    }
    fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    CHECK(fd >= 0, "cannot open mount point %s: %s", dest, strerror(errno));
    close(dir);
    return fd;
}

/* The path mount(2) is given for an O_PATH descriptor: its /proc magic link. */
static const char *fd_path(int fd) {
    static char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return path;
}

/* One mount of the spec, on its destination inside the new root. */
static void do_mount(const struct line *l) {
    need_fields(l, 7);
    const char *source = l->field[1], *dest = l->field[2], *type = l->field[3], *data = l->field[5];
    unsigned long flags = (unsigned long) number(l->field[4], "mount flags");
    unsigned long long attrs = number(l->field[6], "mount attributes");
    if (strcmp(type, "bind") == 0) {
        struct stat st;
        CHECK(fstat(bind_fds[l - lines], &st) == 0, "cannot look at %s: %s", source, strerror(errno));
        int target = destination(dest, !S_ISDIR(st.st_mode));
        CHECK(syscall(SYS_move_mount, bind_fds[l - lines], "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) == 0,
              "cannot bind %s on %s: %s", source, dest, strerror(errno));
        close(bind_fds[l - lines]);
        close(target);
        return;   /* its flags and attributes were set on the copy */
    }
    int target = destination(dest, 0);
    CHECK(mount(source, fd_path(target), type, flags, data[0] == '\0' ? NULL : data) == 0,
          "cannot mount %s on %s: %s", type, dest, strerror(errno));
    close(target);
    if (attrs != 0) {
        /* the new mount, reached again through the root */
        int mounted = open_in_root(dest, O_PATH);
        struct mount_attr_arg attr = { .attr_set = attrs };
        CHECK(mounted >= 0 && syscall(SYS_mount_setattr, mounted, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) == 0,
              "cannot set the recursive attributes 0x%llx of %s: %s", attrs, dest, strerror(errno));
        close(mounted);
    }
}

/*
 * Every bind source of the spec, copied as a detached mount (open_tree) while this is still host
 * root: a source the sandbox's root could not reach (an input in a directory only host root may
 * enter) is bound all the same, and nothing of the host is opened after the user namespace is
 * joined. The copy gets its flags here (read-only, nosuid, nodev, noexec, recursively when the
 * spec's attributes say so) and is moved into place inside the sandbox's mount namespace.
 */
static void clone_bind_sources(void) {
    for (int i = 0; i < line_count; i++) {
        const struct line *l = &lines[i];
        bind_fds[i] = -1;
        if (strcmp(l->field[0], "mount") != 0 || l->count != 7 || strcmp(l->field[3], "bind") != 0) continue;
        unsigned long flags = (unsigned long) number(l->field[4], "mount flags");
        unsigned long long attrs = number(l->field[6], "mount attributes");
        unsigned int recursive = (flags & MS_REC) ? AT_RECURSIVE : 0;
        int fd = (int) syscall(SYS_open_tree, AT_FDCWD, l->field[1], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | recursive);
        CHECK(fd >= 0, "cannot bind %s: %s", l->field[1], strerror(errno));
        struct mount_attr_arg top = { 0 };
        if (flags & MS_RDONLY) top.attr_set |= MOUNT_ATTR_RDONLY;
        if (flags & MS_NOSUID) top.attr_set |= MOUNT_ATTR_NOSUID;
        if (flags & MS_NODEV) top.attr_set |= MOUNT_ATTR_NODEV;
        if (flags & MS_NOEXEC) top.attr_set |= MOUNT_ATTR_NOEXEC;
        if (top.attr_set != 0) {
            CHECK(syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &top, sizeof top) == 0, "cannot set the flags of %s: %s",
                  l->field[1], strerror(errno));
        }
        if (attrs != 0) {
            struct mount_attr_arg all = { .attr_set = attrs };
            CHECK(syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &all, sizeof all) == 0,
                  "cannot set the recursive attributes 0x%llx of %s: %s", attrs, l->field[1], strerror(errno));
        }
        bind_fds[i] = fd;
    }
}

static void loopback_up(void) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr = { 0 };
    strcpy(ifr.ifr_name, "lo");
    CHECK(fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0, "cannot look at the loopback interface: %s", strerror(errno));
    ifr.ifr_flags |= IFF_UP;
    CHECK(ioctl(fd, SIOCSIFFLAGS, &ifr) == 0, "cannot bring the loopback interface up: %s", strerror(errno));
    close(fd);
}

/* A path of /proc or /sys the code must not read: a file becomes /dev/null, a directory an empty read-only tmpfs. */
static void mask(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        return;   /* this kernel has none */
    }
    if (S_ISDIR(st.st_mode)) {
        CHECK(mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555") == 0,
              "cannot mask %s: %s", path, strerror(errno));
    } else {
        CHECK(mount("/dev/null", path, NULL, MS_BIND, NULL) == 0, "cannot mask %s: %s", path, strerror(errno));
    }
}

static void read_only(const char *path) {
    if (access(path, F_OK) != 0) {
        return;
    }
    CHECK(mount(path, path, NULL, MS_BIND | MS_REC, NULL) == 0, "cannot bind %s onto itself: %s", path, strerror(errno));
    remount_bind(path, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
}

/* Nothing in any capability set, the bounding set emptied first (that needs CAP_SETPCAP, which goes last). */
static void drop_capabilities(void) {
    for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++) {
        CHECK(prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0, "cannot drop capability %d from the bounding set: %s", cap, strerror(errno));
    }
    CHECK(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == 0 || errno == EINVAL,
          "cannot clear the ambient capabilities: %s", strerror(errno));
}

static void clear_all_capabilities(void) {
    struct __user_cap_header_struct header = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    CHECK(syscall(SYS_capset, &header, data) == 0, "cannot clear the capability sets: %s", strerror(errno));
}

/* PID 1 of the sandbox, in its new namespaces: sets the sandbox up and becomes the agent. Never returns. */
static _Noreturn void sandbox_init(void) {
    const char *rootfs = required("rootfs");
    if (strcmp(required("network"), "new") == 0) {
        loopback_up();
    }
    const char *hostname = first("hostname");
    if (hostname != NULL) {
        CHECK(sethostname(hostname, strlen(hostname)) == 0, "cannot set the host name: %s", strerror(errno));
    }
    /* Nothing mounted here reaches the host, and nothing the host mounts later reaches here. */
    CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0, "cannot make the mounts private: %s", strerror(errno));
    CHECK(mount(rootfs, rootfs, NULL, MS_BIND | MS_REC, NULL) == 0, "cannot bind the root %s: %s", rootfs, strerror(errno));
    root_fd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
    CHECK(root_fd >= 0, "cannot open the root %s: %s", rootfs, strerror(errno));
    for (int i = 0; i < line_count; i++) {
        const struct line *l = &lines[i];
        if (strcmp(l->field[0], "mount") == 0) {
            do_mount(l);
        } else if (strcmp(l->field[0], "device") == 0) {
            need_fields(l, 3);
            int target = destination(l->field[2], 1);
            CHECK(mount(l->field[1], fd_path(target), NULL, MS_BIND, NULL) == 0, "cannot bind %s on %s: %s", l->field[1], l->field[2],
                  strerror(errno));
            close(target);
        } else if (strcmp(l->field[0], "symlink") == 0) {
            need_fields(l, 3);
            char parent[4096];
            snprintf(parent, sizeof parent, "%s", l->field[2]);
            char *slash = strrchr(parent, '/');
            CHECK(slash != NULL, "link %s is not an absolute path", l->field[2]);
            *slash = '\0';
            int dir = open_in_root(parent[0] == '\0' ? "/" : parent, O_PATH | O_DIRECTORY);
            CHECK(dir >= 0 && symlinkat(l->field[1], dir, slash + 1) == 0, "cannot link %s: %s", l->field[2], strerror(errno));
            close(dir);
        }
    }
    close(root_fd);
    CHECK(chdir(rootfs) == 0, "cannot enter %s: %s", rootfs, strerror(errno));
    /* The old root goes below the new one and is detached at once: nothing of the host stays reachable. */
    CHECK(syscall(SYS_pivot_root, ".", ".") == 0, "cannot pivot into %s: %s", rootfs, strerror(errno));
    CHECK(umount2(".", MNT_DETACH) == 0, "cannot detach the host's root: %s", strerror(errno));
    CHECK(chdir("/") == 0, "cannot enter the new root: %s", strerror(errno));
    for (int i = 0; i < line_count; i++) {
        if (strcmp(lines[i].field[0], "mask") == 0) {
            mask(lines[i].field[1]);
        } else if (strcmp(lines[i].field[0], "readonly") == 0) {
            read_only(lines[i].field[1]);
        }
    }
    remount_bind("/", MS_RDONLY);
    for (int i = 0; i < line_count; i++) {
        if (strcmp(lines[i].field[0], "rlimit") == 0) {
            need_fields(&lines[i], 4);
            struct rlimit r = { number(lines[i].field[2], "soft limit"), number(lines[i].field[3], "hard limit") };
            CHECK(setrlimit((int) number(lines[i].field[1], "rlimit"), &r) == 0, "cannot set rlimit %s: %s", lines[i].field[1],
                  strerror(errno));
        }
    }
    /* In its cgroups before anything of the sandbox runs, and their root is all its cgroup namespace shows. */
    char placed;
    CHECK(read(placed_fd, &placed, 1) == 1, "the launcher did not place the sandbox in its cgroups");
    close(placed_fd);
    CHECK(unshare(CLONE_NEWCGROUP) == 0, "cannot make the sandbox's cgroup namespace: %s", strerror(errno));
    uid_t uid = 0;
    gid_t gid = 0;
    for (int i = 0; i < line_count; i++) {
        if (strcmp(lines[i].field[0], "user") == 0) {
            need_fields(&lines[i], 3);
            uid = (uid_t) number(lines[i].field[1], "uid");
            gid = (gid_t) number(lines[i].field[2], "gid");
        }
    }
    CHECK(uid != 0 && gid != 0, "the spec names no unprivileged user: a sandbox never runs as root");
    drop_capabilities();
    CHECK(setgroups(0, NULL) == 0, "cannot drop the supplementary groups: %s", strerror(errno));
    CHECK(setresgid(gid, gid, gid) == 0 && setresuid(uid, uid, uid) == 0, "cannot become uid %u gid %u: %s", uid, gid, strerror(errno));
    clear_all_capabilities();
    CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "cannot set no_new_privs: %s", strerror(errno));
    const char *cwd = first("cwd");
    CHECK(chdir(cwd == NULL ? "/" : cwd) == 0, "cannot enter %s: %s", cwd, strerror(errno));
    static char *argv[MAX_LINES + 1], *envp[MAX_LINES + 1];
    int argc = 0, envc = 0;
    for (int i = 0; i < line_count; i++) {
        if (strcmp(lines[i].field[0], "arg") == 0) argv[argc++] = lines[i].field[1];
        if (strcmp(lines[i].field[0], "env") == 0) envp[envc++] = lines[i].field[1];
    }
    CHECK(argc > 0, "the spec has no arg line: nothing to run");
    /* Last: from here on every system call, the execve first, is the filter's to allow. */
    if (filter_program.len > 0) {
        CHECK(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &filter_program) == 0, "cannot install the seccomp filter: %s",
              strerror(errno));
    }
    execve(argv[0], argv, envp);
    fail("cannot run %s: %s", argv[0], strerror(errno));
}

/*
 * The sandbox's user namespace, made by a child running as the sandbox's own host uid (the kernel
 * charges per-user budgets, inotify's among them, up the chain to a namespace's creator: made as
 * host root, every sandbox would share root's), its uid and gid maps written from here as host
 * root, "0 HOST-ID COUNT" from the spec's line "idmap HOST-ID COUNT". Returns a descriptor of it:
 * held, the namespace outlives the child, which exits once it is read.
 */
static int make_user_namespace(void) {
    const struct line *idmap = NULL;
    for (int i = 0; i < line_count && idmap == NULL; i++) {
        if (strcmp(lines[i].field[0], "idmap") == 0) idmap = &lines[i];
    }
    CHECK(idmap != NULL && idmap->count == 3, "the spec has no line 'idmap HOST-ID COUNT'");
    unsigned long long host_id = number(idmap->field[1], "the idmap's host id");
    unsigned long long ids = number(idmap->field[2], "the idmap's count");
    CHECK(host_id > 0 && ids > 0 && host_id + ids <= 0xffffffffULL, "the idmap %llu %llu is outside the host's ids", host_id, ids);
    int ready[2], hold[2];
    CHECK(pipe2(ready, O_CLOEXEC) == 0 && pipe2(hold, O_CLOEXEC) == 0, "cannot make a pipe: %s", strerror(errno));
    pid_t maker = fork();
    CHECK(maker >= 0, "cannot start the user namespace's maker: %s", strerror(errno));
    if (maker == 0) {
        close(ready[0]);
        close(hold[1]);
        uid_t uid = (uid_t) host_id;
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || setgroups(0, NULL) != 0 || setresgid(uid, uid, uid) != 0
                || setresuid(uid, uid, uid) != 0 || unshare(CLONE_NEWUSER) != 0) {
            fail("cannot make the sandbox's user namespace as host uid %llu: %s (user namespaces must be enabled: see"
                 " 'airlock doctor')", host_id, strerror(errno));
        }
        char byte = 'R';
        if (write(ready[1], &byte, 1) != 1) {
            _exit(1);
        }
        /* Held until the launcher has the namespace: its end of the pipe closes. */
        while (read(hold[0], &byte, 1) < 0 && errno == EINTR) {
        }
        _exit(0);
    }
    close(ready[1]);
    close(hold[0]);
    char said = 0;
    ssize_t n;
    while ((n = read(ready[0], &said, 1)) < 0 && errno == EINTR) {
    }
    close(ready[0]);
    if (n != 1 || said != 'R') {
        waitpid(maker, NULL, 0);
        fail("the sandbox's user namespace could not be made (its maker ended first)");
    }
    char map[96], path[64];
    int len = snprintf(map, sizeof map, "0 %llu %llu\n", host_id, ids);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "/proc/%d/%s", maker, i == 0 ? "uid_map" : "gid_map");
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        CHECK(fd >= 0 && write(fd, map, (size_t) len) == len, "cannot write %s: %s", path, strerror(errno));
        close(fd);
    }
    snprintf(path, sizeof path, "/proc/%d/ns/user", maker);
    int userns = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(userns >= 0, "cannot open %s: %s", path, strerror(errno));
    close(hold[1]);
    waitpid(maker, NULL, 0);
    return userns;
}

/* The sandbox's PID 1 once forked; killed if this start runs out of time. */
static volatile pid_t sandbox_pid;

static void kill_sandbox_and_end(int sig) {
    if (sandbox_pid > 0) {
        kill(sandbox_pid, SIGKILL);
    }
    /* ends this process by the signal (blocked while this runs, it is delivered on return): serve answers "timed-out" */
    signal(sig, SIG_DFL);
    raise(sig);
}

/*
 * Starts the sandbox of the spec file at spec_path and ends this process: status 0 once PID 1
 * executes the agent, after writing "[TAG<tab>]PID" on stdout in one write; status 1, after
 * writing the reason on stderr, when anything failed.
 */
static _Noreturn void launch(const char *spec_path, const char *tag) {
    read_spec(spec_path);
    /* Everything that needs host root is done before the user namespace is joined. */
    const char *seccomp = first("seccomp");
    if (seccomp != NULL) {
        load_filter(seccomp);
    }
    const char *log = first("log");
    int log_fd = log == NULL ? -1 : open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    CHECK(log == NULL || log_fd >= 0, "cannot open the log %s: %s", log, strerror(errno));
    clone_bind_sources();
    int userns = make_user_namespace();
    /* Opened as host root; written after the user namespace is joined (the kernel checks the opener's credentials). */
    static int cgroup_fds[MAX_LINES];
    int cgroups = 0;
    for (int i = 0; i < line_count; i++) {
        if (strcmp(lines[i].field[0], "cgroup") == 0) {
            char procs[4096];
            snprintf(procs, sizeof procs, "%s/cgroup.procs", lines[i].field[1]);
            cgroup_fds[cgroups] = open(procs, O_WRONLY | O_CLOEXEC);
            CHECK(cgroup_fds[cgroups] >= 0, "cannot open %s: %s", procs, strerror(errno));
            cgroups++;
        }
    }
    CHECK(setns(userns, CLONE_NEWUSER) == 0, "cannot join the user namespace: %s", strerror(errno));
    close(userns);
    /* Its root: host root's ids mean nothing inside (files made with them would have no owner). */
    CHECK(setresgid(0, 0, 0) == 0 && setresuid(0, 0, 0) == 0, "cannot become the user namespace's root: %s", strerror(errno));
    /* A new network namespace holds only a loopback: no route out exists. "host" only for 'airlock verify --unsafe'. */
    int network = strcmp(required("network"), "new") == 0 ? CLONE_NEWNET : 0;
    /* The cgroup namespace comes later, from PID 1 once it is in its cgroups (see placed_fd). */
    CHECK(unshare(CLONE_NEWNS | network | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID) == 0,
          "cannot make the sandbox's namespaces: %s", strerror(errno));
    int errors[2], placed[2];
    CHECK(pipe2(errors, O_CLOEXEC) == 0 && pipe2(placed, O_CLOEXEC) == 0, "cannot make a pipe: %s", strerror(errno));
    /* A start killed for its time (serve's alarm) takes PID 1 with it: no half-made sandbox runs on. */
    struct sigaction on_alarm = {.sa_handler = kill_sandbox_and_end};
    sigemptyset(&on_alarm.sa_mask);
    sigset_t alarm_only, before;
    sigemptyset(&alarm_only);
    sigaddset(&alarm_only, SIGALRM);
    CHECK(sigaction(SIGALRM, &on_alarm, NULL) == 0 && sigprocmask(SIG_BLOCK, &alarm_only, &before) == 0,
          "cannot handle SIGALRM: %s", strerror(errno));
    pid_t pid = fork();
    CHECK(pid >= 0, "cannot start the sandbox's first process: %s", strerror(errno));
    if (pid == 0) {
        signal(SIGALRM, SIG_DFL);
        sigprocmask(SIG_SETMASK, &before, NULL);
        close(errors[0]);
        close(placed[1]);
        placed_fd = placed[0];
        error_fd = errors[1];
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        CHECK(null >= 0 && dup2(null, 0) == 0, "cannot open /dev/null: %s", strerror(errno));
        int out = log_fd >= 0 ? log_fd : null;
        CHECK(dup2(out, 1) == 1 && dup2(out, 2) == 2, "cannot redirect the output: %s", strerror(errno));
        setsid();
        sandbox_init();
    }
    sandbox_pid = pid;
    sigprocmask(SIG_SETMASK, &before, NULL);
    close(errors[1]);
    close(placed[0]);
    /*
     * PID 1 into the sandbox's cgroups while it sets its mounts up: the first move waits for an RCU
     * grace period in the kernel (5 to 35 ms here), which this overlaps with that work, as runc does.
     */
    char child[32];
    snprintf(child, sizeof child, "%d", pid);
    for (int i = 0; i < cgroups; i++) {
        if (write(cgroup_fds[i], child, strlen(child)) != (ssize_t) strlen(child)) {
            int e = errno;
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            fail("cannot place the sandbox in its cgroup: %s", strerror(e));
        }
        close(cgroup_fds[i]);
    }
    CHECK(write(placed[1], "p", 1) == 1, "cannot tell the sandbox it is placed: %s", strerror(errno));
    close(placed[1]);
    /* The exec closes the pipe's other end; a failure writes its reason first. */
    char reason[1024];
    size_t got = 0;
    ssize_t n;
    while ((n = read(errors[0], reason + got, sizeof reason - 1 - got)) > 0) {
        got += (size_t) n;
    }
    /* PID 1 executes the agent or has failed: nothing is left to wait for, and a started sandbox is never killed for time */
    alarm(0);
    sandbox_pid = 0;
    if (got > 0) {
        if (write(2, reason, got) < 0) {
            /* the log is gone: the status says it failed */
        }
        waitpid(pid, NULL, 0);
        _exit(1);
    }
    char answer[300];
    int len = snprintf(answer, sizeof answer, "%s%s%d\n", tag == NULL ? "" : tag, tag == NULL ? "" : "\t", pid);
    _exit(write(1, answer, (size_t) len) == len ? 0 : 1);
}

/*
 * The most starts a server runs at once: a request past it is answered "busy" at once. "serve MOST
 * SECONDS" sets both bounds (the host's LaunchServer.java passes its own), at most these ceilings.
 */
#define MAX_STARTS 256
static int max_starts = MAX_STARTS;
/*
 * The longest a start may take (a log on a FIFO, a bind source on a hung file system...) before its
 * process, and the sandbox's PID 1 if it has one, are killed and it is answered "timed-out".
 */
#define START_SECONDS 60
static unsigned start_seconds = START_SECONDS;

static struct start {
    pid_t pid;
    char tag[128];
} starts[MAX_STARTS];

/* The server's own answer for start TAG: "busy", "timed-out" or "failed" (the start's reason is in its log). */
static void answer(const char *tag, const char *what) {
    char line[160];
    int len = snprintf(line, sizeof line, "%s\t%s\n", tag, what);
    if (write(1, line, (size_t) len) < 0) {
        /* the host is gone: nobody waits for the answer */
    }
}

/* One request line "TAG<tab>SPEC<tab>LOG": a child of this server starts that sandbox, its stderr appended to LOG. */
static void start_one(char *request) {
    char *tag = request, *spec = strchr(request, '\t'), *log = spec == NULL ? NULL : strchr(spec + 1, '\t');
    if (log == NULL || spec - tag >= (long) sizeof starts[0].tag || spec == tag) {
        dprintf(2, "airlock-launch serve: a request is not TAG<tab>SPEC<tab>LOG: %.200s\n", request);
        return;
    }
    size_t tag_length = (size_t) (spec - tag);
    *spec++ = '\0';
    *log++ = '\0';
    int slot = -1;
    for (int i = 0; i < max_starts && slot < 0; i++) {
        if (starts[i].pid == 0) slot = i;
    }
    if (slot < 0) {
        answer(tag, "busy");
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        answer(tag, "failed");
        return;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* first: opening the log may block (a FIFO), as may any step after it */
        alarm(start_seconds);
        int log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (log_fd < 0 || dup2(log_fd, 2) != 2) {
            _exit(1);
        }
        close(log_fd);
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, 0) != 0) {
            _exit(1);
        }
        launch(spec, tag);
    }
    starts[slot].pid = pid;
    memcpy(starts[slot].tag, tag, tag_length + 1);
}

/*
 * "airlock-launch serve": one launcher for all of a host process's starts (Launcher.java), so that
 * a start costs a fork of this small process instead of a new process of the host's, which for a
 * JVM is a spawn helper's exec and then this program's. Requests come one a line on stdin; each
 * start runs in a child of its own, exactly as "run" would, and answers "TAG<tab>PID" itself once
 * its PID 1 runs; this server answers "TAG<tab>busy" for a request past its most starts at once,
 * "TAG<tab>timed-out" for a start killed for its time and "TAG<tab>failed" for one that ended
 * otherwise. It ends when stdin closes (its host process ended) and every start has ended.
 */
static int serve(int argc, char **argv) {
    if (argc > 2) {
        unsigned long long most = number(argv[2], "serve's most starts at once");
        CHECK(most >= 1 && most <= MAX_STARTS, "serve's most starts at once are 1 to %d, not %s", MAX_STARTS, argv[2]);
        max_starts = (int) most;
    }
    if (argc > 3) {
        unsigned long long seconds = number(argv[3], "serve's seconds a start may take");
        CHECK(seconds >= 1 && seconds <= START_SECONDS, "serve's seconds a start may take are 1 to %d, not %s", START_SECONDS, argv[3]);
        start_seconds = (unsigned) seconds;
    }
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    CHECK(sigprocmask(SIG_BLOCK, &chld, NULL) == 0, "cannot block SIGCHLD: %s", strerror(errno));
    int children = signalfd(-1, &chld, SFD_CLOEXEC);
    CHECK(children >= 0, "cannot make a signalfd: %s", strerror(errno));
    static char buf[65536];
    size_t have = 0;
    int open_ = 1, running = 0;
    while (open_ || running > 0) {
        struct pollfd fds[2] = {{.fd = children, .events = POLLIN}, {.fd = open_ ? 0 : -1, .events = POLLIN}};
        if (poll(fds, 2, -1) < 0) {
            CHECK(errno == EINTR, "poll: %s", strerror(errno));
            continue;
        }
        if (fds[0].revents & POLLIN) {
            struct signalfd_siginfo info;
            if (read(children, &info, sizeof info) < 0 && errno != EAGAIN) {
                fail("cannot read the signalfd: %s", strerror(errno));
            }
            int status;
            pid_t pid;
            while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
                for (int i = 0; i < MAX_STARTS; i++) {
                    if (starts[i].pid == pid) {
                        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
                            answer(starts[i].tag, "timed-out");
                        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                            answer(starts[i].tag, "failed");
                        }
                        starts[i].pid = 0;
                    }
                }
            }
        }
        if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(0, buf + have, sizeof buf - 1 - have);
            if (n <= 0) {
                open_ = 0;
            } else {
                have += (size_t) n;
                char *line = buf, *end;
                while ((end = memchr(line, '\n', have - (size_t) (line - buf))) != NULL) {
                    *end = '\0';
                    start_one(line);
                    line = end + 1;
                }
                have -= (size_t) (line - buf);
                memmove(buf, line, have);
                if (have == sizeof buf - 1) {
                    dprintf(2, "airlock-launch serve: a request line is over %zu bytes\n", sizeof buf - 1);
                    have = 0;
                }
            }
        }
        running = 0;
        for (int i = 0; i < MAX_STARTS; i++) {
            running += starts[i].pid != 0;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        puts("airlock-launch 1");
        return 0;
    }
    if (argc >= 2 && argc <= 4 && strcmp(argv[1], "serve") == 0) {
        return serve(argc, argv);
    }
    if (argc != 3 || strcmp(argv[1], "run") != 0) {
        fputs("usage: airlock-launch run SPEC | serve [MOST-STARTS [SECONDS]]   (Airlock's container runtime; the host's Launcher runs it)\n",
              stderr);
        return 2;
    }
    launch(argv[2], NULL);
}
