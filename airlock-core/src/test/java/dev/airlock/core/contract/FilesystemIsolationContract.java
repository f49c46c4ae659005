package dev.airlock.core.contract;

import dev.airlock.core.ExecResult;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import static dev.airlock.core.contract.Hostile.py;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The sandbox's view of the file system: only the image (host /usr without /usr/local, a
 * synthesized /etc), read-only; writable tmpfs at /tmp, /workspace and /dev/shm only; nothing of
 * the host's own files, accounts or Airlock state; masked /proc files; no /sys.
 */
public abstract class FilesystemIsolationContract extends ContractTestBase {

    protected FilesystemIsolationContract(DriverContract driver) {
        super(driver);
    }

    /**
     * A host with a mount below a directory that sandboxes get from it (a GPU driver below /usr,
     * WSL2's /usr/lib/wsl, a directory of /etc the system image binds): the sandbox starts, the
     * submount's files are there, and the submount is read-only, nosuid and nodev inside although it
     * is a read-write tmpfs on the host (world-writable, so only the read-only flag can stop a write).
     * A set-uid-root copy of {@code id} on it runs with the sandbox user's ids.
     */
    @Test
    @Tag("smoke")
    void aReadWriteHostMountBelowUsrOrEtcIsThereReadOnlyAndNosuid() throws Exception {
        assumeTrue(systemImage(), "only the system image binds the host's /usr and /etc directories");
        List<Path> below = new ArrayList<>(List.of(Path.of("/usr/share")));
        if (Files.isDirectory(Path.of("/etc/alternatives")) && !guest()) {
            below.add(Path.of("/etc/alternatives"));   // bound from the host by the container tiers' system image
        }
        List<HostSubmount> mounts = new ArrayList<>();
        try {
            for (Path parent : below) {
                HostSubmount m = HostSubmount.tmpfs(parent.resolve(Hostile.token("submount")));
                mounts.add(m);
                Files.writeString(m.dir().resolve("marker"), "from the host's submount\n");
                Path id = m.dir().resolve("id-setuid");
                Files.copy(Path.of("/usr/bin/id"), id);
                Files.setAttribute(id, "unix:mode", 04755);
            }
            try (var sb = engine.create(spec())) {
                for (HostSubmount m : mounts) {
                    String dir = m.dir().toString();
                    ExecResult r = ok(python(sb, py("""
                            print(open("%s/marker").read(), end="")
                            attempt("write", lambda: open("%s/written", "w"))
                            attempt("mkdir", lambda: os.mkdir("%s/made"))
                            import subprocess
                            print("ids", subprocess.run(["%s/id-setuid", "-u"], capture_output=True, text=True).stdout.strip(), os.getuid())
                            """.formatted(dir, dir, dir, dir))));
                    String uid = r.stdoutText().lines().filter(l -> l.startsWith("ids ")).findFirst().orElse("ids ? ?").split(" ")[2];
                    assertThat(r.stdoutText()).as(dir).isEqualTo("""
                            from the host's submount
                            write: EROFS Read-only file system
                            mkdir: EROFS Read-only file system
                            ids %s %s
                            """.formatted(uid, uid));
                    assertThat(m.dir().resolve("written")).as("nothing reached the host").doesNotExist();
                    if (sandboxProcessesAreHostProcesses()) {
                        String mountinfo = ok(exec(sb, "grep", " " + dir + " ", "/proc/self/mountinfo")).stdoutText();
                        assertThat(mountinfo.split(" ")[5].split(",")).as(mountinfo).contains("ro", "nosuid", "nodev");
                    }
                }
            }
        } finally {
            for (HostSubmount m : mounts) {
                m.close();
            }
        }
    }

    @Test
    void sandboxCannotSeeHostRootOrHomeDirectories() {
        // a stored image's /root, /var or /opt are its own; the host's markers are looked for in every image below
        assumeTrue(systemImage(), "the host's /root, /home, /var ... are left out of the system image only");
        assertThat(Path.of("/root")).as("the host has a /root to hide").isDirectory();
        ExecResult r = ok(python(py("""
                attempt("/root", lambda: os.listdir("/root"))
                print("/home:", os.listdir("/home"))
                attempt("/var", lambda: os.listdir("/var"))
                attempt("/opt", lambda: os.listdir("/opt"))
                attempt("/srv", lambda: os.listdir("/srv"))
                attempt("/mnt", lambda: os.listdir("/mnt"))
                """)));
        assertThat(r.stdoutText()).isEqualTo("""
                /root: ENOENT No such file or directory
                /home: ['user']
                /var: ENOENT No such file or directory
                /opt: ENOENT No such file or directory
                /srv: ENOENT No such file or directory
                /mnt: ENOENT No such file or directory
                """);
    }

    /**
     * A file the host creates after the engine started, in places an attacker would look, is
     * visible nowhere in the sandbox: neither at its path nor anywhere in a walk of the whole tree.
     * One marker in each place and one walk that looks for every one of them: a walk of the whole
     * tree is what costs (the host's /usr alone has over 100000 entries), and one proves for each
     * marker what a walk of its own would.
     */
    @Test
    void hostFileIsNotVisibleInTheSandbox() throws IOException {
        List<Path> markers = new ArrayList<>();
        try {
            for (String hostDir : List.of("/root", "/var/tmp", "/usr/local", "/usr/local/bin", "/etc", "/run", "/tmp", "/")) {
                Path dir = Path.of(hostDir);
                Files.createDirectories(dir);
                String name = Hostile.token("marker");
                Path marker = dir.resolve(name);
                Files.writeString(marker, "secret " + name + "\n");
                markers.add(marker);
            }
            String paths = String.join(", ", markers.stream().map(m -> "\"" + m + "\"").toList());
            Duration timeout = treeWalkTimeout();
            ExecResult r = ok(run(Language.PYTHON, py("""
                    paths = [%s]
                    names = [os.path.basename(p) for p in paths]
                    for p in paths:
                        attempt("open " + p, lambda: open(p).read())
                    hits = []
                    for root, dirs, files in os.walk("/"):
                        if root == "/":
                            dirs[:] = [d for d in dirs if d != "proc"]
                        hits += [os.path.join(root, n) for n in dirs + files if any(name in n for name in names)]
                    print("hits", hits)
                    """.formatted(paths)), Limits.DEFAULTS.withTimeout(timeout)));
            StringBuilder expected = new StringBuilder();
            markers.forEach(m -> expected.append("open ").append(m).append(": ENOENT No such file or directory\n"));
            assertThat(r.stdoutText()).isEqualTo(expected + "hits []\n");
        } finally {
            for (Path marker : markers) {
                Files.deleteIfExists(marker);
            }
        }
    }

    @Test
    void usrLocalIsEmpty() throws IOException {
        // a stored image's /usr/local is its own; the host's markers are looked for in every image above
        assumeTrue(systemImage(), "the host's /usr/local is left out of the system image only");
        assertThat(Path.of("/usr/local")).isDirectory();
        try (var host = Files.list(Path.of("/usr/local"))) {
            assertThat(host.count()).as("the host's /usr/local has something to hide").isPositive();
        }
        ExecResult r = ok(python("import os; print(os.listdir('/usr/local'))"));
        assertThat(r.stdoutText()).isEqualTo("[]\n");
    }

    @Test
    void etcPasswdAndGroupHoldNoHostAccounts() throws IOException {
        List<String> hostAccounts = Files.readAllLines(Path.of("/etc/passwd")).stream()
                .map(l -> l.split(":")[0])
                .filter(n -> !n.isEmpty() && !Set.of("root", "nobody", "sandbox").contains(n))
                .toList();
        assertThat(hostAccounts).as("the host has accounts of its own").isNotEmpty();
        ExecResult r = ok(python(py("""
                print(open("/etc/passwd").read(), end="")
                print("--")
                print(open("/etc/group").read(), end="")
                print("--")
                for p in ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh", "/etc/pam.d", "/etc/security"]:
                    attempt(p, lambda: os.stat(p))
                """)));
        String expected = """
                root:x:0:0:root:/root:/usr/sbin/nologin
                sandbox:x:1000:1000:sandbox:/workspace:/bin/sh
                nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
                --
                root:x:0:
                sandbox:x:1000:
                nogroup:x:65534:
                --
                /etc/shadow: ENOENT No such file or directory
                /etc/gshadow: ENOENT No such file or directory
                /etc/sudoers: ENOENT No such file or directory
                /etc/ssh: ENOENT No such file or directory
                /etc/pam.d: ENOENT No such file or directory
                /etc/security: ENOENT No such file or directory
                """;
        if (systemImage()) {
            assertThat(r.stdoutText()).isEqualTo(expected);
        } else {
            // a stored image keeps the rest of its own /etc (such as Debian's /etc/pam.d); its accounts are synthesized
            String accounts = expected.substring(0, expected.indexOf("/etc/sudoers"));
            assertThat(r.stdoutText()).startsWith(accounts);
        }
        for (String account : hostAccounts) {
            assertThat(r.stdoutText()).as("host account %s", account).doesNotContain(account + ":");
        }
    }

    /**
     * The host's Airlock state (bundles of every sandbox, the engine lock, the image root) is not
     * reachable: /run holds only the sandbox's own directory, which cannot be listed and no longer
     * holds the agent's socket once the sandbox is started.
     */
    @Test
    void airlockStateIsInvisibleBeyondTheSandboxsOwnSocketDirectory() {
        assertThat(driver.hostStateDirectory().resolve("engines")).as("the host state the sandbox must not see").isDirectory();
        ExecResult r = ok(python(py("""
                import stat
                print("run", os.listdir("/run"))
                attempt("list /run/airlock", lambda: os.listdir("/run/airlock"))
                st = os.stat("/run/airlock")
                print("mode", oct(stat.S_IMODE(st.st_mode)), "uid", st.st_uid)
                for p in ["/run/airlock/agent.sock", "/run/airlock/engines", "/run/airlock/config.json",
                          "/run/airlock/runtime.log", "/run/airlock/../config.json", "/run/airlock/lock"]:
                    print(p, os.path.lexists(p))
                """)));
        assertThat(r.stdoutText()).isEqualTo("""
                run ['airlock']
                list /run/airlock: EACCES Permission denied
                mode 0o711 uid %d
                /run/airlock/agent.sock False
                /run/airlock/engines False
                /run/airlock/config.json False
                /run/airlock/runtime.log False
                /run/airlock/../config.json False
                /run/airlock/lock False
                """.formatted(hostRootShownAs()));
    }

    /**
     * The error of creating a file in a read-only directory of host root's: EROFS under the host's
     * kernel; gVisor checks the directory's permissions first, so the sandbox user gets EACCES.
     * Nothing is written either way.
     */
    private String createRefused() {
        return gvisor() ? "EACCES Permission denied" : "EROFS Read-only file system";
    }

    /** Creating anything outside the writable tmpfs mounts fails: the root and its binds are read-only. */
    @ParameterizedTest(name = "create in {0}")
    @ValueSource(strings = {"/", "/etc", "/usr", "/usr/bin", "/usr/lib", "/usr/local", "/bin", "/lib", "/run",
            "/run/airlock", "/.airlock", "/etc/ssl/certs", "/etc/alternatives"})
    void creatingFilesOutsideWorkspaceAndTmpFailsWithReadOnlyFileSystem(String dir) {
        ExecResult r = ok(python(py("""
                d = "%s"
                attempt("create", lambda: write_to(os.path.join(d, "airlock-probe")))
                attempt("mkdir", lambda: os.mkdir(os.path.join(d, "airlock-probe-dir")))
                attempt("symlink", lambda: os.symlink("/tmp", os.path.join(d, "airlock-probe-link")))
                """.formatted(dir))));
        assertThat(r.stdoutText()).isEqualTo("""
                create: %s
                mkdir: EROFS Read-only file system
                symlink: EROFS Read-only file system
                """.formatted(createRefused()));
    }

    /**
     * Existing files of the image cannot be changed: opening them for writing is refused (they
     * belong to a host user the sandbox has no mapping for), renaming and chmod hit the read-only
     * mount.
     */
    @ParameterizedTest(name = "modify {0}")
    @ValueSource(strings = {"/etc/passwd", "/etc/hosts", "/etc/resolv.conf", "/etc/ld.so.cache", "/.airlock/airlock-agent",
            "/usr/bin/python3.11", "/usr/bin/sh"})
    void existingImageFilesCannotBeModified(String file) {
        ExecResult r = ok(python(py("""
                p = "%s"
                attempt("append", lambda: write_to(p, "a"))
                attempt("truncate", lambda: os.truncate(p, 0))
                attempt("chmod", lambda: os.chmod(p, 0o777))
                attempt("rename", lambda: os.rename(p, p + ".moved"))
                attempt("unlink", lambda: os.unlink(p))
                """.formatted(file))));
        // gVisor checks ownership and the directory's permissions before the read-only mount: chmod of
        // a file the sandbox user does not own is EPERM, unlinking from host root's directory EACCES.
        // A guest's kernel (Debian 12's Linux 6.1) checks the read-only mount before the file's
        // permission in truncate(2), so EROFS there; this host's 6.18 checks the permission first
        // (EACCES, as runc's sandboxes get it). Nothing is changed either way.
        assertThat(r.stdoutText()).isEqualTo("""
                append: EACCES Permission denied
                truncate: %s
                chmod: %s
                rename: EROFS Read-only file system
                unlink: %s
                """.formatted(guest() ? "EROFS Read-only file system" : "EACCES Permission denied",
                gvisor() ? "EPERM Operation not permitted" : "EROFS Read-only file system", createRefused()));
    }

    /** The counterpart of the refusals: the three writable places do accept files (the probe itself works). */
    @Test
    void workspaceTmpAndDevShmAreWritable() {
        ExecResult r = ok(python(py("""
                for d in ["/workspace", "/tmp", "/dev/shm"]:
                    attempt(d, lambda: write_to(os.path.join(d, "airlock-probe")))
                """)));
        assertThat(r.stdoutText()).isEqualTo("/workspace: ok\n/tmp: ok\n/dev/shm: ok\n");
    }

    /**
     * E2B's home, /home/user, is /workspace under a second name (a link in every image's root), so that
     * code written for E2B's sandboxes finds a writable home: nothing writable is added.
     */
    @Test
    @Tag("smoke")
    void homeUserIsALinkToTheWorkspace() {
        ExecResult r = ok(python(py("""
                print(os.readlink("/home/user"), os.path.realpath("/home/user"))
                attempt("/home/user", lambda: write_to("/home/user/airlock-probe"))
                print(open("/workspace/airlock-probe").read())
                attempt("/home", lambda: write_to("/home/other"))
                """)));
        assertThat(r.stdoutText()).isEqualTo("../workspace /workspace\n/home/user: ok\nx\n/home: %s\n".formatted(createRefused()));
    }

    /**
     * /dev is a tiny tmpfs the sandbox user cannot write to, holding only the harmless character
     * devices (null, zero, full, random, urandom, tty) and links; no block device, and mknod is
     * refused.
     */
    @Test
    void devHoldsOnlyHarmlessDevicesAndCannotBeExtended() {
        ExecResult r = ok(python(py("""
                import stat
                for n in sorted(os.listdir("/dev")):
                    st = os.lstat("/dev/" + n)
                    if stat.S_ISCHR(st.st_mode):
                        print(n, "chr", f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")
                    elif stat.S_ISBLK(st.st_mode):
                        print(n, "BLOCK", f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")
                    elif stat.S_ISLNK(st.st_mode):
                        print(n, "link", os.readlink("/dev/" + n))
                    else:
                        print(n, "dir" if stat.S_ISDIR(st.st_mode) else "other")
                attempt("create /dev/x", lambda: write_to("/dev/x"))
                attempt("mknod /tmp/mem", lambda: os.mknod("/tmp/mem", 0o600 | stat.S_IFCHR, os.makedev(1, 1)))
                attempt("mknod /tmp/vda", lambda: os.mknod("/tmp/vda", 0o600 | stat.S_IFBLK, os.makedev(254, 0)))
                for p in ["/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/dev/vda", "/dev/sda", "/dev/fuse", "/dev/net/tun", "/dev/vsock", "/dev/kvm"]:
                    attempt(p, lambda: os.stat(p))
                """)));
        if (gvisor()) {
            assertSentrysDev(r);
            return;
        }
        // pts: the sandbox's own devpts instance (executions on a terminal), none of the host's terminals
        assertThat(r.stdoutText()).isEqualTo("""
                fd link /proc/self/fd
                full chr 1:7
                null chr 1:3
                ptmx link pts/ptmx
                pts dir
                random chr 1:8
                shm dir
                stderr link /proc/self/fd/2
                stdin link /proc/self/fd/0
                stdout link /proc/self/fd/1
                tty chr 5:0
                urandom chr 1:9
                zero chr 1:5
                create /dev/x: EACCES Permission denied
                mknod /tmp/mem: EPERM Operation not permitted
                mknod /tmp/vda: EPERM Operation not permitted
                /dev/mem: ENOENT No such file or directory
                /dev/kmem: ENOENT No such file or directory
                /dev/port: ENOENT No such file or directory
                /dev/kmsg: ENOENT No such file or directory
                /dev/vda: ENOENT No such file or directory
                /dev/sda: ENOENT No such file or directory
                /dev/fuse: ENOENT No such file or directory
                /dev/net/tun: ENOENT No such file or directory
                /dev/vsock: ENOENT No such file or directory
                /dev/kvm: ENOENT No such file or directory
                """);
    }

    /**
     * gVisor's /dev is the Sentry's own: besides the same harmless devices it has its own fuse, tun
     * and pts, none of them a host device, and it lets the sandbox user make device nodes in its
     * tmpfs (no CAP_MKNOD check), which open to nothing: the Sentry has no such device (ENXIO).
     */
    private void assertSentrysDev(ExecResult r) {
        assertThat(r.stdoutText()).isEqualTo("""
                fd link /proc/self/fd
                full chr 1:7
                fuse chr 10:229
                net dir
                null chr 1:3
                ptmx link pts/ptmx
                pts dir
                random chr 1:8
                shm dir
                stderr link /proc/self/fd/2
                stdin link /proc/self/fd/0
                stdout link /proc/self/fd/1
                tty chr 5:0
                urandom chr 1:9
                zero chr 1:5
                create /dev/x: EACCES Permission denied
                mknod /tmp/mem: ok
                mknod /tmp/vda: ok
                /dev/mem: ENOENT No such file or directory
                /dev/kmem: ENOENT No such file or directory
                /dev/port: ENOENT No such file or directory
                /dev/kmsg: ENOENT No such file or directory
                /dev/vda: ENOENT No such file or directory
                /dev/sda: ENOENT No such file or directory
                /dev/fuse: ok
                /dev/net/tun: ok
                /dev/vsock: ENOENT No such file or directory
                /dev/kvm: ENOENT No such file or directory
                """);
        ExecResult opened = ok(python(py("""
                import stat
                os.mknod("/tmp/mem", 0o600 | stat.S_IFCHR, os.makedev(1, 1))
                os.mknod("/tmp/vda", 0o600 | stat.S_IFBLK, os.makedev(254, 0))
                attempt("open /tmp/mem", lambda: open("/tmp/mem", "rb").read(16))
                attempt("open /tmp/vda", lambda: open("/tmp/vda", "rb").read(16))
                """)));
        assertThat(opened.stdoutText()).isEqualTo("""
                open /tmp/mem: ENXIO No such device or address
                open /tmp/vda: ENXIO No such device or address
                """);
    }

    /**
     * Masked /proc files reveal nothing: those the host kernel has read empty in the sandbox (they
     * are /dev/null), those it lacks do not exist. The host's own copies are not empty, so the
     * masking is what hides them.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"/proc/kcore", "/proc/keys", "/proc/kallsyms", "/proc/timer_list", "/proc/sched_debug",
            "/proc/kmsg", "/proc/sysrq-trigger", "/proc/modules", "/proc/config.gz", "/proc/latency_stats", "/proc/timer_stats"})
    void maskedProcFileRevealsNothing(String path) throws IOException {
        boolean onHost = Files.exists(Path.of(path));
        if (onHost && !path.equals("/proc/kmsg") && !path.equals("/proc/sysrq-trigger") && !path.equals("/proc/kcore")) {
            try (var in = Files.newInputStream(Path.of(path))) {
                assertThat(in.read()).as("host's %s has content", path).isNotEqualTo(-1);
            }
        }
        ExecResult r = ok(python(py("""
                def read():
                    with open("%s", "rb") as f:
                        print("read", len(f.read(65536)), "bytes", flush=True)
                attempt("%s", read)
                """.formatted(path, path))));
        if (guest()) {
            // A guest's /proc is its own kernel's: the file is there if that kernel has it (its
            // directory lists it), and then it reads empty.
            boolean inGuest = inSandboxDirectoryListing(path);
            assertThat(r.stdoutText()).isEqualTo(inGuest ? "read 0 bytes\n" + path + ": ok\n" : path + ": ENOENT No such file or directory\n");
            return;
        }
        // The Sentry's /proc (gVisor) has none of them at all.
        assertThat(r.stdoutText()).isEqualTo(onHost && !gvisor()
                ? "read 0 bytes\n" + path + ": ok\n"
                : path + ": ENOENT No such file or directory\n");
    }

    @Test
    void maskedProcDirectoriesAreEmptyOrAbsent() {
        List<String> expected = new ArrayList<>();
        for (String dir : List.of("/proc/acpi", "/proc/asound", "/proc/scsi")) {
            // The Sentry's /proc (gVisor) has none of them.
            // A guest's /proc is its own kernel's: the directory is there if that kernel has it (/proc lists it).
            boolean exists = guest() ? inSandboxDirectoryListing(dir) : Files.isDirectory(Path.of(dir)) && !gvisor();
            expected.add(exists ? dir + " []" : dir + ": ENOENT No such file or directory");
        }
        ExecResult r = ok(python(py("""
                for d in ["/proc/acpi", "/proc/asound", "/proc/scsi"]:
                    attempt(d, lambda: print(d, os.listdir(d), flush=True))
                """)));
        String out = Arrays.stream(r.stdoutText().split("\n")).filter(l -> !l.endsWith(": ok")).collect(Collectors.joining("\n"));
        assertThat(out).isEqualTo(String.join("\n", expected));
    }

    /** Whether the sandbox's listing of the path's directory names it (a masked path is still listed). */
    private boolean inSandboxDirectoryListing(String path) {
        Path p = Path.of(path);
        ExecResult r = ok(python("import os; print(%s in os.listdir(%s))".formatted(
                "'" + p.getFileName() + "'", "'" + p.getParent() + "'")));
        return r.stdoutText().equals("True\n");
    }

    /** /proc/sys is read-only: no core_pattern escape, no sysctl changes. */
    @Test
    void procSysCannotBeWritten() {
        ExecResult r = ok(python(py("""
                for p in ["/proc/sys/kernel/core_pattern", "/proc/sys/kernel/hostname", "/proc/sys/vm/drop_caches",
                          "/proc/sys/kernel/randomize_va_space", "/proc/sys/net/ipv4/ip_forward"]:
                    attempt(p, lambda: write_to(p, "a"))
                """)));
        assertThat(r.stdoutText()).isEqualTo("""
                /proc/sys/kernel/core_pattern: EACCES Permission denied
                /proc/sys/kernel/hostname: EACCES Permission denied
                /proc/sys/vm/drop_caches: EACCES Permission denied
                /proc/sys/kernel/randomize_va_space: EACCES Permission denied
                /proc/sys/net/ipv4/ip_forward: EACCES Permission denied
                """);
    }

    @Test
    void sysIsAbsent() {
        if (gvisor()) {
            // runsc always mounts the Sentry's own /sys, made up like its /proc: no host device,
            // module, firmware, kernel or cgroup entry, and four files in all (the CPUs it runs on, lo).
            ExecResult r = ok(python("""
                    import os
                    files = sorted(os.path.join(top, n) for top, dirs, names in os.walk("/sys") for n in names)
                    print(files)
                    print(sorted(os.listdir("/sys/fs/cgroup")), sorted(os.listdir("/sys/kernel")), sorted(os.listdir("/sys/block")))
                    """));
            assertThat(r.stdoutText()).isEqualTo("""
                    ['/sys/class/net/lo/gro_flush_timeout', '/sys/devices/system/cpu/online', '/sys/devices/system/cpu/possible', '/sys/devices/system/cpu/present']
                    [] [] []
                    """);
            return;
        }
        ExecResult r = ok(python(py("""
                attempt("/sys", lambda: os.listdir("/sys"))
                attempt("/sys/fs/cgroup", lambda: os.listdir("/sys/fs/cgroup"))
                attempt("/sys/kernel", lambda: os.listdir("/sys/kernel"))
                """)));
        assertThat(r.stdoutText()).isEqualTo("""
                /sys: ENOENT No such file or directory
                /sys/fs/cgroup: ENOENT No such file or directory
                /sys/kernel: ENOENT No such file or directory
                """);
    }
}
