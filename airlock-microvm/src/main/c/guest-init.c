/*
 * airlock-guest-init: PID 1 of an Airlock microVM guest. See MicroVmDriver.
 *
 * Runs from the initramfs as root, once per boot, and sets the guest up the way the OCI driver sets
 * up a container: loads the kernel modules the initramfs carries (/.airlock/modules.load, in order),
 * mounts the image (the host's /usr read-only over 9p, mount tag "usr", with /usr/local hidden; or,
 * when the kernel command line has airlock.image=1, a stored image's files from the read-only
 * squashfs disk /dev/vda: mount_image), fresh size-capped tmpfs on /tmp and /workspace, and mounts the sandbox's inputs read-only at /inputs (9p mount
 * tag "inputs", when the kernel command line has airlock.inputs=1), and copies the public files of
 * its run directory into /run/airlock (tag "run", airlock.run=1). It then starts the agent as PID 1 of a new pid and mount
 * namespace, as the unprivileged sandbox user (uid 1000), with no capabilities (an empty bounding
 * set too), no_new_privs and RLIMIT_NPROC, in a cgroup capping its memory and tasks, with a minimal
 * /dev (and /dev/shm) and runc's /proc masks, under the seccomp filter the host compiled from the
 * allow-list every driver uses (/.airlock/seccomp.bpf), connected to the host through the
 * virtio-serial port named "airlock" (a node of its own at /.airlock/port). The guest's only
 * network interface is its loopback, which it brings up. When the agent exits (the host hung up,
 * or it failed) the guest reboots, which QEMU's -no-reboot turns into QEMU's exit.
 *
 * Its settings come from the kernel command line, all numbers: airlock.disk (bytes of each tmpfs),
 * airlock.memory (bytes the sandbox's cgroup may use), airlock.nofile, airlock.fsize (the agent's
 * rlimits), airlock.pids (RLIMIT_NPROC of the sandbox user and the cgroup's pids.max), and
 * airlock.egress (the egress bridge's port on the loopback, when the sandbox has network: the agent
 * then multiplexes its connections over the virtio-serial port named "airlock-egress", a node of
 * its own at /.airlock/egress-port). What it says goes to the console (the host's console log). Its
 * one exchange with the host is the control process's (control_main: the port "airlock-ctl", a
 * reseed and a clock step after a restore), which nothing in the sandbox can reach.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/random.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SANDBOX_UID 1000
#define AGENT "/.airlock/airlock-agent"
#define MODULES "/.airlock/modules"
#define SECCOMP_FILTER "/.airlock/seccomp.bpf"
#define MAX_FILTER_INSNS 4096
#define CGROUP_ROOT "/sys/fs/cgroup"
#define SANDBOX_CGROUP CGROUP_ROOT "/sandbox"
/* The agent's end of its virtio-serial port, outside the sandbox's /dev (the sandbox user's, 0600). */
#define AGENT_PORT "/.airlock/port"
#define EGRESS_PORT "/.airlock/egress-port"
#define PORT_NAME "airlock"
#define EGRESS_PORT_NAME "airlock-egress"
#define CTL_PORT_NAME "airlock-ctl"
/* One message of the host on the control port: 32 random bytes, then the host's time (u64 seconds, u32 nanoseconds, big-endian). */
#define CTL_SEED_BYTES 32
#define CTL_MESSAGE_BYTES (CTL_SEED_BYTES + 12)
#define PORT_WAIT_MS 10000
/* Where a stored image's disk is mounted while its top-level directories are bound into place. */
#define IMAGE "/.airlock/image"
#define IMAGE_DEVICE "/dev/vda"
/*
 * The 9p mounts' largest message. Linux 6.1 (the guest's) allocates two buffers of msize for every
 * request, however small (a walk, a getattr, a clunk): at 512 KiB a walk of the 9p /usr spent most
 * of its time allocating them under TCG (find /usr/share/doc, 6869 entries: 10 s at 512 KiB, 2.7 s
 * at 64 KiB, 5 s at 32 KiB, measured on a loaded two-core host). 64 KiB still reads files in large
 * chunks.
 */
#define P9_MSIZE "msize=65536"

static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("airlock-guest-init: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Ends the guest: PID 1 must not exit (that panics the kernel), so reboot, which ends QEMU. */
static _Noreturn void end_guest(void) {
    sync();
    reboot(RB_AUTOBOOT);
    for (;;) pause();
}

static _Noreturn void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("airlock-guest-init: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    end_guest();
}

static void mount_or_fail(const char *source, const char *target, const char *type, unsigned long flags, const char *data) {
    if (mount(source, target, type, flags, data) < 0) {
        fail("cannot mount %s on %s: %s", type, target, strerror(errno));
    }
}

/*
 * A stored image's files, from the read-only squashfs on IMAGE_DEVICE (the host made it from the
 * image store's tree: GuestDisks): each top-level directory of the image is bound read-only,
 * nosuid and nodev over the initramfs's, each top-level link replaces the initramfs's (an image
 * without merged /usr has /bin and /lib as directories). What the guest makes itself stays the
 * initramfs's: /dev, /proc, /sys, /tmp, /workspace, /inputs, /run (the run files), /home (its user
 * link to /workspace) and /.airlock. The disk's own mount goes once the binds hold it.
 */
static void mount_image(void) {
    static const char *const own[] = { ".airlock", "dev", "proc", "sys", "tmp", "workspace", "inputs", "run", "home", NULL };
    int waited = 0;
    while (access(IMAGE_DEVICE, F_OK) != 0) {
        if (waited >= PORT_WAIT_MS) {
            fail("no disk " IMAGE_DEVICE " appeared within %d ms: QEMU gives a stored image's files as a virtio-blk device", PORT_WAIT_MS);
        }
        nanosleep(&(struct timespec) { 0, 10 * 1000 * 1000 }, NULL);
        waited += 10;
    }
    if (mkdir(IMAGE, 0700) < 0 && errno != EEXIST) {
        fail("cannot make " IMAGE ": %s", strerror(errno));
    }
    mount_or_fail(IMAGE_DEVICE, IMAGE, "squashfs", MS_RDONLY | MS_NOSUID | MS_NODEV, NULL);
    DIR *top = opendir(IMAGE);
    if (top == NULL) {
        fail("cannot read the image's root: %s", strerror(errno));
    }
    struct dirent *entry;
    while ((entry = readdir(top)) != NULL) {
        const char *name = entry->d_name;
        int skip = strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
        for (int i = 0; !skip && own[i] != NULL; i++) {
            skip = strcmp(name, own[i]) == 0;
        }
        if (skip) continue;
        char from[300], to[300];
        snprintf(from, sizeof from, IMAGE "/%s", name);
        snprintf(to, sizeof to, "/%s", name);
        struct stat image, here;
        if (lstat(from, &image) < 0) {
            fail("cannot read %s: %s", from, strerror(errno));
        }
        if (!S_ISDIR(image.st_mode) && !S_ISLNK(image.st_mode)) continue;   /* a file at the top: nothing needs one */
        if (lstat(to, &here) == 0 && (!S_ISDIR(here.st_mode) || S_ISLNK(image.st_mode)) && unlink(to) < 0 && rmdir(to) < 0) {
            fail("cannot replace %s with the image's: %s", to, strerror(errno));
        }
        if (S_ISLNK(image.st_mode)) {
            char target[4096];
            ssize_t n = readlink(from, target, sizeof target - 1);
            if (n < 0) {
                fail("cannot read the link %s: %s", from, strerror(errno));
            }
            target[n] = '\0';
            if (symlink(target, to) < 0) {
                fail("cannot link %s: %s", to, strerror(errno));
            }
            continue;
        }
        if (mkdir(to, 0755) < 0 && errno != EEXIST) {
            fail("cannot make %s: %s", to, strerror(errno));
        }
        /* Read-only as a mount, as the OCI driver's bind of an image's root is (EACCES, not EROFS, for a file not the user's). */
        mount_or_fail(from, to, NULL, MS_BIND, NULL);
        mount_or_fail(NULL, to, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL);
    }
    closedir(top);
    umount2(IMAGE, MNT_DETACH);
    rmdir(IMAGE);
}

static void find_port(const char *wanted, char *device, size_t size);

static unsigned long long get_be(const unsigned char *p, int bytes) {
    unsigned long long v = 0;
    for (int i = 0; i < bytes; i++) v = (v << 8) | p[i];
    return v;
}

/*
 * The guest's control process: root, outside the sandbox's pid and mount namespaces and cgroup,
 * holding the virtio-serial port named CTL_PORT_NAME, which the sandbox's /dev never has. It serves
 * the host after a guest is restored from a memory snapshot, when every copy of the guest starts
 * with the same kernel random state and the clock of the moment it was saved: each message gives
 * 32 bytes of the host's randomness, credited to the kernel's pool (RNDADDENTROPY) and made the
 * CRNG's next seed at once (RNDRESEEDCRNG), and the host's time, which the clock is stepped to;
 * then it answers one byte. A port whose host end is not connected reads end of file: waited out.
 */
static _Noreturn void control_main(const char *device) {
    int port = open(device, O_RDWR | O_NOCTTY | O_CLOEXEC);
    int random = open("/dev/urandom", O_RDWR | O_CLOEXEC);
    if (port < 0 || random < 0) {
        say("the control process cannot open %s or /dev/urandom: %s", device, strerror(errno));
        _exit(1);
    }
    unsigned char message[CTL_MESSAGE_BYTES];
    size_t have = 0;
    for (;;) {
        ssize_t n = read(port, message + have, sizeof message - have);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            say("the control process cannot read its port: %s", strerror(errno));
            _exit(1);
        }
        if (n == 0) {
            nanosleep(&(struct timespec) { 0, 20 * 1000 * 1000 }, NULL);
            continue;
        }
        have += (size_t) n;
        if (have < sizeof message) continue;
        have = 0;
        struct {
            int entropy_count;
            int buf_size;
            unsigned char buf[CTL_SEED_BYTES];
        } seed = { CTL_SEED_BYTES * 8, CTL_SEED_BYTES, { 0 } };
        memcpy(seed.buf, message, CTL_SEED_BYTES);
        char answer = 'k';
        if (ioctl(random, RNDADDENTROPY, &seed) < 0 || ioctl(random, RNDRESEEDCRNG) < 0) {
            say("cannot reseed the guest's random number generator: %s", strerror(errno));
            answer = 'r';
        }
        explicit_bzero(&seed, sizeof seed);
        explicit_bzero(message, CTL_SEED_BYTES);
        struct timespec now = { (time_t) get_be(message + CTL_SEED_BYTES, 8), (long) get_be(message + CTL_SEED_BYTES + 8, 4) };
        if (now.tv_nsec >= 1000000000L || clock_settime(CLOCK_REALTIME, &now) < 0) {
            say("cannot step the guest's clock: %s", strerror(errno));
            answer = answer == 'k' ? 't' : answer;
        }
        while (write(port, &answer, 1) < 0 && errno == EINTR) {
        }
    }
}

static void start_control(void) {
    char device[300];
    find_port(CTL_PORT_NAME, device, sizeof device);
    pid_t pid = fork();
    if (pid < 0) {
        fail("cannot start the control process: %s", strerror(errno));
    }
    if (pid == 0) {
        control_main(device);
    }
}

/* Loads the modules named in MODULES.load, one a line, dependencies first. */
static void load_modules(void) {
    FILE *list = fopen(MODULES ".load", "r");
    if (list == NULL) {
        fail("cannot open " MODULES ".load: %s", strerror(errno));
    }
    char name[128];
    while (fgets(name, sizeof name, list) != NULL) {
        name[strcspn(name, "\n")] = '\0';
        if (name[0] == '\0') continue;
        char path[256];
        snprintf(path, sizeof path, MODULES "/%s.ko", name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fail("cannot open module %s: %s", path, strerror(errno));
        }
        if (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST) {
            fail("cannot load module %s: %s", name, strerror(errno));
        }
        close(fd);
    }
    fclose(list);
}

/* The number after "airlock.<key>=" on the kernel command line, or fallback. */
static unsigned long long setting(const char *cmdline, const char *key, unsigned long long fallback) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "airlock.%s=", key);
    for (const char *p = strstr(cmdline, pattern); p != NULL; p = strstr(p + 1, pattern)) {
        if (p == cmdline || p[-1] == ' ') {
            char *end;
            unsigned long long v = strtoull(p + strlen(pattern), &end, 10);
            if (v > 0 && (*end == ' ' || *end == '\n' || *end == '\0')) return v;
            fail("the kernel command line's airlock.%s is not a positive number", key);
        }
    }
    return fallback;
}

static void read_cmdline(char *buf, size_t size) {
    int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, size - 1);
    if (n < 0) {
        fail("cannot read /proc/cmdline: %s", strerror(errno));
    }
    buf[n] = '\0';
    close(fd);
}

/*
 * The device of the virtio-serial port named PORT_NAME (/dev/vportNpM). The host announces its
 * ports after the driver is up, so it may take a moment to appear.
 */
static void find_port(const char *wanted, char *device, size_t size) {
    for (int waited = 0; waited < PORT_WAIT_MS; waited += 10) {
        DIR *ports = opendir("/sys/class/virtio-ports");
        struct dirent *entry;
        while (ports != NULL && (entry = readdir(ports)) != NULL) {
            if (entry->d_name[0] == '.') continue;
            char path[512], name[64] = "";
            snprintf(path, sizeof path, "/sys/class/virtio-ports/%s/name", entry->d_name);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) continue;
            ssize_t n = read(fd, name, sizeof name - 1);
            close(fd);
            name[n > 0 ? n : 0] = '\0';
            name[strcspn(name, "\n")] = '\0';
            snprintf(device, size, "/dev/%s", entry->d_name);
            if (strcmp(name, wanted) == 0 && access(device, F_OK) == 0) {
                closedir(ports);
                return;
            }
        }
        if (ports != NULL) closedir(ports);
        nanosleep(&(struct timespec) { 0, 10 * 1000 * 1000 }, NULL);
    }
    fail("no virtio-serial port named %s appeared within %d ms: QEMU needs -device virtserialport,name=%s", wanted,
         PORT_WAIT_MS, wanted);
}

static void private_device(const char *device, const char *path);

/*
 * The egress bridge, when the kernel command line asks for it (airlock.egress=PORT): the agent's
 * arguments --egress-port PORT --egress-device EGRESS_PORT, a node of the sandbox user's for the
 * virtio-serial port QEMU names EGRESS_PORT_NAME. Without it, egress[0] stays NULL: no bridge.
 */
static void egress_args(const char *cmdline, char **egress) {
    static char port[16], device[300];
    unsigned long long p = setting(cmdline, "egress", 0);
    if (p == 0) {
        return;
    }
    if (p > 65535) {
        fail("the kernel command line's airlock.egress is not a port");
    }
    find_port(EGRESS_PORT_NAME, device, sizeof device);
    private_device(device, EGRESS_PORT);
    snprintf(port, sizeof port, "%llu", p);
    egress[0] = "--egress-port";
    egress[1] = port;
    egress[2] = "--egress-device";
    egress[3] = EGRESS_PORT;
}

/*
 * The public files of the sandbox's run directory (the egress trust bundle), where the broker's
 * variables point: QEMU exports only those files (VmmJail, 9p tag "run"). They are copied into the
 * initramfs's /run/airlock (root's, 0711, read-only once / is), so that directory is as a
 * container's: its files read by name, never listed; the export is unmounted again.
 */
static void copy_run_files(void) {
    const char *from = "/.airlock/run-files";
    if (mkdir(from, 0700) < 0) {
        fail("cannot make %s: %s", from, strerror(errno));
    }
    mount_or_fail("run", from, "9p", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "trans=virtio,version=9p2000.L," P9_MSIZE);
    DIR *dir = opendir(from);
    if (dir == NULL) {
        fail("cannot list %s: %s", from, strerror(errno));
    }
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        char source[512], target[512];
        snprintf(source, sizeof source, "%s/%s", from, entry->d_name);
        snprintf(target, sizeof target, "/run/airlock/%s", entry->d_name);
        int in = open(source, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
            fail("%s is not a regular file: %s", source, strerror(errno));
        }
        int out = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (out < 0) {
            fail("cannot make %s: %s", target, strerror(errno));
        }
        char buf[65536];
        ssize_t n;
        while ((n = read(in, buf, sizeof buf)) > 0) {
            if (write(out, buf, (size_t) n) != n) {
                fail("cannot write %s: %s", target, strerror(errno));
            }
        }
        if (n < 0 || fchmod(out, 0644) < 0) {
            fail("cannot copy %s: %s", source, strerror(errno));
        }
        close(in);
        close(out);
    }
    closedir(dir);
    if (umount(from) < 0 || rmdir(from) < 0) {
        fail("cannot remove %s: %s", from, strerror(errno));
    }
}

/* Brings up the loopback interface, the guest's only one: code may serve and reach 127.0.0.1 and ::1. */
static void loopback_up(void) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr = { 0 };
    strcpy(ifr.ifr_name, "lo");
    if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
        fail("cannot look at the loopback interface: %s", strerror(errno));
    }
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0) {
        fail("cannot bring the loopback interface up: %s", strerror(errno));
    }
    close(fd);
}

static void mount_tmpfs(const char *target, unsigned long long bytes, const char *mode, int uid) {
    char options[128];
    snprintf(options, sizeof options, "size=%llu,mode=%s,uid=%d,gid=%d", bytes, mode, uid, uid);
    mount_or_fail("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, options);
}

/*
 * The seccomp filter the host compiled from the shared allow-list (SeccompFilter): struct
 * sock_filter entries as they are, read once before the agent starts.
 */
static struct sock_filter filter[MAX_FILTER_INSNS];
static struct sock_fprog filter_program;

static void load_filter(void) {
    int fd = open(SECCOMP_FILTER, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fail("cannot open " SECCOMP_FILTER ": %s", strerror(errno));
    }
    size_t size = 0;
    ssize_t n;
    while (size < sizeof filter && (n = read(fd, (char *) filter + size, sizeof filter - size)) > 0) {
        size += (size_t) n;
    }
    char extra;
    if (size == 0 || size % sizeof filter[0] != 0 || read(fd, &extra, 1) != 0) {
        fail(SECCOMP_FILTER " is not a seccomp program of at most %d instructions (%zu bytes)", MAX_FILTER_INSNS, size);
    }
    close(fd);
    filter_program.len = (unsigned short) (size / sizeof filter[0]);
    filter_program.filter = filter;
}

static void write_file(const char *path, const char *value) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, value, strlen(value)) != (ssize_t) strlen(value)) {
        fail("cannot write %s to %s: %s", value, path, strerror(errno));
    }
    close(fd);
}

/*
 * The sandbox's cgroup, as a container's: the agent and everything it starts are in it, their
 * memory (tmpfs pages included) capped at the sandbox's memory limit with no swap, so the guest
 * kernel OOM-kills within the group when it is reached; their tasks at the pids limit. Returns an
 * open descriptor of the group's cgroup.procs, for the agent to join through it.
 */
static int sandbox_cgroup(unsigned long long memory, unsigned long long pids) {
    mount_or_fail("cgroup2", CGROUP_ROOT, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    write_file(CGROUP_ROOT "/cgroup.subtree_control", "+memory +pids");
    if (mkdir(SANDBOX_CGROUP, 0755) < 0) {
        fail("cannot make the sandbox's cgroup " SANDBOX_CGROUP ": %s", strerror(errno));
    }
    char value[32];
    snprintf(value, sizeof value, "%llu", memory);
    write_file(SANDBOX_CGROUP "/memory.max", value);
    if (access(SANDBOX_CGROUP "/memory.swap.max", F_OK) == 0) {
        write_file(SANDBOX_CGROUP "/memory.swap.max", "0");
    }
    snprintf(value, sizeof value, "%llu", pids);
    write_file(SANDBOX_CGROUP "/pids.max", value);
    int procs = open(SANDBOX_CGROUP "/cgroup.procs", O_WRONLY | O_CLOEXEC);
    if (procs < 0) {
        fail("cannot open " SANDBOX_CGROUP "/cgroup.procs: %s", strerror(errno));
    }
    return procs;
}

/*
 * A device node of the guest's for the sandbox user alone, at path, outside /dev: the agent's
 * virtio-serial port, so /dev can be the minimal one. Done before / is made read-only.
 */
static void private_device(const char *device, const char *path) {
    struct stat st;
    if (stat(device, &st) < 0 || !S_ISCHR(st.st_mode)) {
        fail("%s is not a character device: %s", device, strerror(errno));
    }
    if (mknod(path, S_IFCHR | 0600, st.st_rdev) < 0 || chown(path, SANDBOX_UID, SANDBOX_UID) < 0) {
        fail("cannot make %s: %s", path, strerror(errno));
    }
}

/* In the agent's process before it becomes the sandbox user: say why and end it (the guest ends with it). */
#define CHILD_CHECK(ok, ...) do { if (!(ok)) { say(__VA_ARGS__); _exit(1); } } while (0)

/*
 * The sandbox's /dev, as a container's: a small tmpfs of root's holding only the harmless character
 * devices, the usual links and /dev/shm; no devtmpfs, so no disk, console, kmsg or port of the
 * guest's. Replaces the devtmpfs in the agent's mount namespace only.
 */
static void minimal_dev(unsigned long long shm_bytes) {
    static const struct { const char *name; unsigned major, minor; } devices[] = {
        { "null", 1, 3 }, { "zero", 1, 5 }, { "full", 1, 7 }, { "random", 1, 8 }, { "urandom", 1, 9 }, { "tty", 5, 0 },
    };
    static const char *links[][2] = {
        { "fd", "/proc/self/fd" }, { "stdin", "/proc/self/fd/0" }, { "stdout", "/proc/self/fd/1" },
        { "stderr", "/proc/self/fd/2" }, { "ptmx", "pts/ptmx" },
    };
    CHILD_CHECK(umount2("/dev", MNT_DETACH) == 0, "cannot detach the guest's /dev: %s", strerror(errno));
    CHILD_CHECK(mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,nr_inodes=64,mode=0755") == 0,
                "cannot mount the sandbox's /dev: %s", strerror(errno));
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++) {
        char path[64];
        snprintf(path, sizeof path, "/dev/%s", devices[i].name);
        CHILD_CHECK(mknod(path, S_IFCHR | 0666, makedev(devices[i].major, devices[i].minor)) == 0 && chmod(path, 0666) == 0,
                    "cannot make %s: %s", path, strerror(errno));
    }
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        char path[64];
        snprintf(path, sizeof path, "/dev/%s", links[i][0]);
        CHILD_CHECK(symlink(links[i][1], path) == 0, "cannot make %s: %s", path, strerror(errno));
    }
    /* The sandbox's pseudo-terminals (an exec with a tty): /dev/ptmx links to this instance's ptmx.
     * Not fatal: without it only executions with a terminal fail (the agent says it cannot open one). */
    if (mkdir("/dev/pts", 0755) < 0 || mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") < 0) {
        say("cannot mount the sandbox's /dev/pts, so no execution can have a terminal: %s", strerror(errno));
    }
    char options[128];
    snprintf(options, sizeof options, "size=%llu,mode=1777,uid=%d,gid=%d", shm_bytes, SANDBOX_UID, SANDBOX_UID);
    CHILD_CHECK(mkdir("/dev/shm", 0755) == 0 && mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, options) == 0,
                "cannot mount /dev/shm: %s", strerror(errno));
}

/*
 * /proc files and directories that tell about the guest's kernel and hardware rather than the
 * sandbox, masked as runc masks them: files read empty (/dev/null over them), directories are
 * empty and read-only. Those the guest kernel lacks stay absent.
 */
static void mask_proc(void) {
    static const char *files[] = {
        "/proc/kcore", "/proc/keys", "/proc/kallsyms", "/proc/timer_list", "/proc/sched_debug", "/proc/kmsg",
        "/proc/sysrq-trigger", "/proc/modules", "/proc/config.gz", "/proc/latency_stats", "/proc/timer_stats",
    };
    static const char *dirs[] = { "/proc/acpi", "/proc/asound", "/proc/scsi" };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        CHILD_CHECK(access(files[i], F_OK) < 0 || mount("/dev/null", files[i], NULL, MS_BIND, NULL) == 0,
                    "cannot mask %s: %s", files[i], strerror(errno));
    }
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        CHILD_CHECK(access(dirs[i], F_OK) < 0
                        || mount("tmpfs", dirs[i], "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555") == 0,
                    "cannot mask %s: %s", dirs[i], strerror(errno));
    }
}

/* The agent: PID 1 of a new pid namespace, as the sandbox user. Never returns. */
static _Noreturn void exec_agent(char **egress, unsigned long long nofile, unsigned long long fsize, unsigned long long pids,
                                 unsigned long long shm_bytes, int cgroup_procs) {
    if (write(cgroup_procs, "0", 1) != 1) {
        say("cannot join the sandbox's cgroup: %s", strerror(errno));
        _exit(1);
    }
    close(cgroup_procs);
    /* Its own /proc, of its own pid namespace (this process is in a new mount namespace too). */
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
        say("cannot mount /proc for the agent: %s", strerror(errno));
        _exit(1);
    }
    /* As a container's: the guest's kernel and firmware interfaces are none of the code's business. */
    minimal_dev(shm_bytes);
    mask_proc();
    /* No capability can ever come back, not even through a file's capabilities: empty the bounding set. */
    for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
            say("cannot drop capability %d from the bounding set: %s", cap, strerror(errno));
            _exit(1);
        }
    }
    struct rlimit nproc = { pids, pids };
    if (setrlimit(RLIMIT_NPROC, &nproc) < 0 || setgroups(0, NULL) < 0
            || setresgid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0 || setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0
            || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        say("cannot become the sandbox user: %s", strerror(errno));
        _exit(1);
    }
    if (chdir("/workspace") < 0) {
        say("cannot enter /workspace: %s", strerror(errno));
        _exit(1);
    }
    char nofile_arg[32], fsize_arg[32];
    snprintf(nofile_arg, sizeof nofile_arg, "%llu", nofile);
    snprintf(fsize_arg, sizeof fsize_arg, "%llu", fsize);
    char *argv[] = { AGENT, "--nofile", nofile_arg, "--fsize", fsize_arg, egress[0], egress[1], egress[2], egress[3],
                     AGENT_PORT, NULL };
    if (egress[0] == NULL) {
        argv[5] = AGENT_PORT;
        argv[6] = NULL;
    }
    char *envp[] = { "PATH=/usr/bin:/bin:/usr/sbin:/sbin", NULL };
    /* Last: from here on every system call, the execve first, is the filter's to allow. */
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &filter_program) < 0) {
        say("cannot install the seccomp filter: %s", strerror(errno));
        _exit(1);
    }
    execve(AGENT, argv, envp);
    say("cannot run " AGENT ": %s", strerror(errno));
    _exit(127);
}

int main(void) {
    if (getpid() != 1) {
        fputs("airlock-guest-init: this is PID 1 of an Airlock microVM guest, not a program to run\n", stderr);
        return 2;
    }
    umask(022);
    mount_or_fail("devtmpfs", "/dev", "devtmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755");
    mount_or_fail("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    mount_or_fail("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    char cmdline[4096];
    read_cmdline(cmdline, sizeof cmdline);
    unsigned long long disk = setting(cmdline, "disk", 128ULL << 20);
    unsigned long long nofile = setting(cmdline, "nofile", 1024);
    unsigned long long fsize = setting(cmdline, "fsize", 64ULL << 20);
    unsigned long long pids = setting(cmdline, "pids", 256);
    unsigned long long memory = setting(cmdline, "memory", 512ULL << 20);

    load_modules();
    load_filter();
    int cgroup_procs = sandbox_cgroup(memory, pids);
    if (setting(cmdline, "image", 0)) {
        mount_image();
    } else {
        /* The image 'system': the host's /usr (QEMU exports it read-only); set-uid bits and devices on it
         * mean nothing here. Read-only as a mount rather than as a file system, as a container's bind
         * mount is: a write to a file the sandbox user may not write then fails EACCES, not EROFS. */
        mount_or_fail("usr", "/usr", "9p", MS_NOSUID | MS_NODEV, "trans=virtio,version=9p2000.L," P9_MSIZE ",cache=loose");
        mount_or_fail(NULL, "/usr", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL);
        if (access("/usr/local", F_OK) == 0) {
            mount_or_fail("tmpfs", "/usr/local", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=0755");
        }
    }
    /* The sandbox's inputs: QEMU exports only their mount points, each a read-only bind of one input
     * (VmmJail); read-only here as a mount too, as the OCI driver's binds are. No cache: the host's file as it is now. */
    if (setting(cmdline, "inputs", 0)) {
        mount_or_fail("inputs", "/inputs", "9p", MS_NOSUID | MS_NODEV, "trans=virtio,version=9p2000.L," P9_MSIZE);
        mount_or_fail(NULL, "/inputs", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL);
    }
    if (setting(cmdline, "run", 0)) {
        copy_run_files();
    }
    mount_tmpfs("/tmp", disk, "1777", 0);
    mount_tmpfs("/workspace", disk, "0755", SANDBOX_UID);

    char device[300];
    find_port(PORT_NAME, device, sizeof device);
    private_device(device, AGENT_PORT);
    char *egress[4] = { NULL, NULL, NULL, NULL };
    egress_args(cmdline, egress);
    start_control();
    sethostname("sandbox", 7);
    loopback_up();
    /* Nothing of the guest's kernel interfaces beyond what the agent's own /proc shows. */
    umount2(CGROUP_ROOT, MNT_DETACH);
    umount2("/sys", MNT_DETACH);
    rmdir("/sys");
    umount2("/proc", MNT_DETACH);
    /* The kernel's own /root (made while it unpacks the initramfs): a container has none. */
    rmdir("/root");
    /* The initramfs root: nothing in it is the sandbox's to change (it is root's anyway). Read-only
     * as a mount, as a container's root is: a write to a file the sandbox user may not write then
     * fails EACCES, not EROFS. */
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0) {
        say("cannot make / read-only: %s", strerror(errno));
    }

    pid_t agent = (pid_t) syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNS | SIGCHLD, NULL, NULL, NULL, NULL);
    if (agent < 0) {
        fail("cannot start the agent: %s", strerror(errno));
    }
    if (agent == 0) {
        exec_agent(egress, nofile, fsize, pids, disk < (64ULL << 20) ? disk : (64ULL << 20), cgroup_procs);
    }
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid == agent) {
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                say("the agent ended (status 0x%x): the guest stops", status);
            }
            end_guest();
        }
        if (pid < 0 && errno != EINTR) {
            fail("waitpid: %s", strerror(errno));
        }
    }
}
