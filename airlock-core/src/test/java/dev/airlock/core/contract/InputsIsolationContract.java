package dev.airlock.core.contract;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.HostFiles;
import dev.airlock.core.Input;
import dev.airlock.core.IsolationDriver;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import static dev.airlock.core.contract.Hostile.PRELUDE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Host inputs: a file and a directory named by the operator appear read-only at /inputs/<name>,
 * and nothing else of the host comes with them. The host tree is laid out so that a leak would
 * show: a readable secret beside the input (behind a parent directory only root may enter), links
 * in the input that point out of it, a file only its owner may read, and a mount below the input.
 */
public abstract class InputsIsolationContract extends ContractTestBase {

    private static Path base;
    private static Path data;
    private static Path single;
    private static Path sibling;
    private static String siblingToken;
    private static Map<String, String> hostSnapshot;

    protected InputsIsolationContract(DriverContract driver) {
        super(driver);
    }

    @BeforeAll
    static void layOutHostTree() throws IOException {
        // createTempDirectory gives 0700: only host root may traverse the inputs' parent.
        base = Files.createTempDirectory("airlock-inputs-");
        siblingToken = Hostile.token("sibling");
        sibling = Files.writeString(base.resolve("sibling-secret.txt"), siblingToken + "\n");
        data = Files.createDirectory(base.resolve("data"));
        Files.writeString(data.resolve("hello.txt"), "hello from the host\n");
        Files.createDirectory(data.resolve("sub"));
        Files.writeString(data.resolve("sub/nested.txt"), "nested\n");
        Files.writeString(data.resolve("script.py"), "print('script ran', 6 * 7)\n");
        Path owner = Files.writeString(data.resolve("owner-only.txt"), "owner only\n");
        Files.setPosixFilePermissions(owner, PosixFilePermissions.fromString("rw-------"));
        // Links an operator left in the input, pointing out of it: they resolve in the sandbox's root.
        Files.createSymbolicLink(data.resolve("link-shadow"), Path.of("/etc/shadow"));
        Files.createSymbolicLink(data.resolve("link-hostname"), Path.of("/etc/hostname"));
        Files.createSymbolicLink(data.resolve("link-sibling-relative"), Path.of("../sibling-secret.txt"));
        Files.createSymbolicLink(data.resolve("link-sibling-absolute"), sibling);
        Files.createSymbolicLink(data.resolve("link-root"), Path.of("/"));
        single = Files.writeString(base.resolve("single.txt"), "one file\n");
        for (Path dir : List.of(data, data.resolve("sub"))) {
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
        for (Path file : List.of(sibling, data.resolve("hello.txt"), data.resolve("sub/nested.txt"), data.resolve("script.py"), single)) {
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
        }
        hostSnapshot = snapshot();
    }

    @AfterAll
    static void removeHostTree() throws IOException {
        HostFiles.deleteTree(base);
    }

    private SandboxSpec withInputs() {
        return spec().withInputs(List.of(new Input("data", data), new Input("single", single)));
    }

    /**
     * The inputs and their sibling on the host: each path's mode, mtime, owner and (for files)
     * content, or link target. (Other tests add files of their own to {@code base}.)
     */
    private static Map<String, String> snapshot() throws IOException {
        Map<String, String> all = new TreeMap<>();
        try (Stream<Path> walk = Stream.concat(Files.walk(data), Stream.of(single, sibling))) {
            for (Path p : walk.toList()) {
                String value;
                if (Files.isSymbolicLink(p)) {
                    value = "-> " + Files.readSymbolicLink(p);
                } else {
                    value = Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS) + " "
                            + Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS) + " "
                            + Files.getAttribute(p, "unix:uid", LinkOption.NOFOLLOW_LINKS)
                            + (Files.isRegularFile(p) ? " " + Files.readString(p) : "");
                }
                all.put(base.relativize(p).toString(), value);
            }
        }
        return all;
    }

    private static String py(Sandbox sandbox, String body) {
        return ok(sandbox.exec(ExecRequest.of("python3", "-c", PRELUDE + body))).stdoutText();
    }

    /** Like {@link #py}, with the time a walk of the whole tree takes ({@link #treeWalkTimeout()}). */
    private String pyWalk(Sandbox sandbox, String body) {
        return ok(sandbox.exec(ExecRequest.of("python3", "-c", PRELUDE + body).withTimeout(treeWalkTimeout()))).stdoutText();
    }

    @Test
    void inputFileAndDirectoryAreReadableAtTheirNames() {
        try (Sandbox s = engine.create(withInputs())) {
            String out = py(s, """
                    import stat
                    print(sorted(os.listdir("/inputs")))
                    print(open("/inputs/single").read(), end="")
                    print(sorted(os.listdir("/inputs/data")))
                    print(open("/inputs/data/hello.txt").read(), end="")
                    print(open("/inputs/data/sub/nested.txt").read(), end="")
                    st = os.stat("/inputs/data/hello.txt")
                    print("owner", st.st_uid, st.st_gid, oct(stat.S_IMODE(st.st_mode)))
                    attempt("owner-only", lambda: open("/inputs/data/owner-only.txt").read())
                    """);
            assertThat(out).isEqualTo("""
                    ['data', 'single']
                    one file
                    ['hello.txt', 'link-hostname', 'link-root', 'link-shadow', 'link-sibling-absolute', 'link-sibling-relative', 'owner-only.txt', 'script.py', 'sub']
                    hello from the host
                    nested
                    owner %d %d 0o644
                    owner-only: EACCES Permission denied
                    """.formatted(hostRootShownAs(), hostRootShownAs()));
            // Not noexec on purpose (OciConfig.Mount.input in the OCI driver): an interpreter runs a script from an input.
            assertThat(ok(s.exec(ExecRequest.of("python3", "/inputs/data/script.py"))).stdoutText()).isEqualTo("script ran 42\n");
        }
    }

    @Test
    @Tag("smoke")
    void inputsCannotBeChangedAndTheHostTreeStaysAsItWas() throws IOException {
        try (Sandbox s = engine.create(withInputs())) {
            String out = py(s, """
                    for p in ["/inputs/single", "/inputs/data/hello.txt"]:
                        attempt(p + " write", lambda: write_to(p))
                        attempt(p + " append", lambda: write_to(p, "a"))
                        attempt(p + " truncate", lambda: os.truncate(p, 0))
                        attempt(p + " chmod", lambda: os.chmod(p, 0o777))
                        attempt(p + " chown", lambda: os.chown(p, 1000, 1000))
                        attempt(p + " touch", lambda: os.utime(p, (0, 0)))
                        attempt(p + " rename", lambda: os.rename(p, p + ".moved"))
                        attempt(p + " unlink", lambda: os.unlink(p))
                        attempt(p + " link", lambda: os.link(p, "/tmp/hardlink"))
                    d = "/inputs/data"
                    attempt("create", lambda: write_to(d + "/new.txt"))
                    attempt("mkdir", lambda: os.mkdir(d + "/newdir"))
                    attempt("symlink", lambda: os.symlink("/tmp", d + "/newlink"))
                    attempt("mknod fifo", lambda: os.mkfifo(d + "/fifo"))
                    attempt("rmdir", lambda: os.rmdir(d + "/sub"))
                    attempt("rename dir", lambda: os.rename(d + "/sub", d + "/sub2"))
                    attempt("rename out", lambda: os.rename(d + "/hello.txt", "/tmp/hello.txt"))
                    attempt("chmod dir", lambda: os.chmod(d, 0o777))
                    attempt("touch dir", lambda: os.utime(d, (0, 0)))
                    attempt("create in /inputs", lambda: write_to("/inputs/new.txt"))
                    attempt("mkdir in /inputs", lambda: os.mkdir("/inputs/new"))
                    attempt("rename input", lambda: os.rename("/inputs/data", "/inputs/data2"))
                    attempt("rmdir input", lambda: os.rmdir("/inputs/data"))
                    """);
            if (gvisor()) {
                // gVisor checks permissions (the host owner's, root) before the read-only mount, so many
                // refusals are EACCES or EPERM where runc gives EROFS; every change is refused either way,
                // and the host tree below is proven unchanged.
                assertThat(out).isEqualTo("""
                        /inputs/single write: EACCES Permission denied
                        /inputs/single append: EACCES Permission denied
                        /inputs/single truncate: EACCES Permission denied
                        /inputs/single chmod: EPERM Operation not permitted
                        /inputs/single chown: EPERM Operation not permitted
                        /inputs/single touch: EPERM Operation not permitted
                        /inputs/single rename: EROFS Read-only file system
                        /inputs/single unlink: EACCES Permission denied
                        /inputs/single link: EXDEV Invalid cross-device link
                        /inputs/data/hello.txt write: EACCES Permission denied
                        /inputs/data/hello.txt append: EACCES Permission denied
                        /inputs/data/hello.txt truncate: EACCES Permission denied
                        /inputs/data/hello.txt chmod: EPERM Operation not permitted
                        /inputs/data/hello.txt chown: EPERM Operation not permitted
                        /inputs/data/hello.txt touch: EPERM Operation not permitted
                        /inputs/data/hello.txt rename: EROFS Read-only file system
                        /inputs/data/hello.txt unlink: EACCES Permission denied
                        /inputs/data/hello.txt link: EXDEV Invalid cross-device link
                        create: EACCES Permission denied
                        mkdir: EROFS Read-only file system
                        symlink: EROFS Read-only file system
                        mknod fifo: EROFS Read-only file system
                        rmdir: EACCES Permission denied
                        rename dir: EROFS Read-only file system
                        rename out: EXDEV Invalid cross-device link
                        chmod dir: EPERM Operation not permitted
                        touch dir: EPERM Operation not permitted
                        create in /inputs: EACCES Permission denied
                        mkdir in /inputs: EROFS Read-only file system
                        rename input: EROFS Read-only file system
                        rmdir input: EACCES Permission denied
                        """);
            } else {
                // A guest's kernel (Debian 12's Linux 6.1) checks the read-only mount before the file's permission in
                // truncate(2): EROFS there, where this host's kernel checks the permission first (see FilesystemIsolation).
                String truncateRefused = guest() ? "EROFS Read-only file system" : "EACCES Permission denied";
                assertThat(out).isEqualTo("""
                        /inputs/single write: EROFS Read-only file system
                        /inputs/single append: EACCES Permission denied
                        /inputs/single truncate: %s
                        /inputs/single chmod: EROFS Read-only file system
                        /inputs/single chown: EROFS Read-only file system
                        /inputs/single touch: EROFS Read-only file system
                        /inputs/single rename: EROFS Read-only file system
                        /inputs/single unlink: EROFS Read-only file system
                        /inputs/single link: EXDEV Invalid cross-device link
                        /inputs/data/hello.txt write: EROFS Read-only file system
                        /inputs/data/hello.txt append: EACCES Permission denied
                        /inputs/data/hello.txt truncate: %s
                        /inputs/data/hello.txt chmod: EROFS Read-only file system
                        /inputs/data/hello.txt chown: EROFS Read-only file system
                        /inputs/data/hello.txt touch: EROFS Read-only file system
                        /inputs/data/hello.txt rename: EROFS Read-only file system
                        /inputs/data/hello.txt unlink: EROFS Read-only file system
                        /inputs/data/hello.txt link: EXDEV Invalid cross-device link
                        create: EROFS Read-only file system
                        mkdir: EROFS Read-only file system
                        symlink: EROFS Read-only file system
                        mknod fifo: EROFS Read-only file system
                        rmdir: EROFS Read-only file system
                        rename dir: EROFS Read-only file system
                        rename out: EXDEV Invalid cross-device link
                        chmod dir: EROFS Read-only file system
                        touch dir: EROFS Read-only file system
                        create in /inputs: EROFS Read-only file system
                        mkdir in /inputs: EROFS Read-only file system
                        rename input: EROFS Read-only file system
                        rmdir input: EROFS Read-only file system
                        """.formatted(truncateRefused, truncateRefused));
            }
        }
        assertThat(snapshot()).as("the host tree after the sandbox tried to change it").isEqualTo(hostSnapshot);
    }

    /**
     * Remounting an input read-write, moving it, or unmounting it to reach what lies below, all
     * fail: the sandbox has no capability, the mount system calls are not on the seccomp allow-list,
     * and no new user namespace can be made to gain them.
     */
    @Test
    void inputsCannotBeRemountedOrUnmounted() {
        try (Sandbox s = engine.create(withInputs())) {
            String out = py(s, """
                    MS_RDONLY, MS_REMOUNT, MS_BIND, MS_MOVE = 1, 32, 4096, 8192
                    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
                    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
                    def call(label, r):
                        print(label, r, errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno()) if r != 0 else "ok", flush=True)
                    for p in [b"/inputs/data", b"/inputs/single", b"/inputs"]:
                        call(p.decode() + " remount rw", libc.mount(None, p, None, MS_REMOUNT | MS_BIND, None))
                        call(p.decode() + " remount", libc.mount(None, p, None, MS_REMOUNT, None))
                        call(p.decode() + " umount", libc.umount2(p, 0))
                        call(p.decode() + " lazy umount", libc.umount2(p, 2))
                        call(p.decode() + " move", libc.mount(p, b"/tmp", None, MS_MOVE, None))
                        call(p.decode() + " bind rw", libc.mount(p, b"/tmp", None, MS_BIND, None))
                    CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
                    call("unshare user+mount", libc.unshare(CLONE_NEWUSER | CLONE_NEWNS))
                    """);
            assertThat(out).isEqualTo("""
                    /inputs/data remount rw -1 EPERM
                    /inputs/data remount -1 EPERM
                    /inputs/data umount -1 EPERM
                    /inputs/data lazy umount -1 EPERM
                    /inputs/data move -1 EPERM
                    /inputs/data bind rw -1 EPERM
                    /inputs/single remount rw -1 EPERM
                    /inputs/single remount -1 EPERM
                    /inputs/single umount -1 EPERM
                    /inputs/single lazy umount -1 EPERM
                    /inputs/single move -1 EPERM
                    /inputs/single bind rw -1 EPERM
                    /inputs remount rw -1 EPERM
                    /inputs remount -1 EPERM
                    /inputs umount -1 EPERM
                    /inputs lazy umount -1 EPERM
                    /inputs move -1 EPERM
                    /inputs bind rw -1 EPERM
                    unshare user+mount -1 EPERM
                    """);
            String viaTools = ok(s.exec(ExecRequest.of("sh", "-c", "mount -o remount,rw /inputs/data; echo exit $?; umount /inputs/data; echo exit $?;"
                    + " umount -l /inputs/single; echo exit $?; echo x > /inputs/data/hello.txt; echo exit $?; cat /inputs/data/hello.txt"))).stdoutText();
            assertThat(viaTools).matches("(?s)exit [1-9]\\d*\nexit [1-9]\\d*\nexit [1-9]\\d*\nexit [1-9]\\d*\nhello from the host\n");
        }
    }

    /**
     * Nothing of the input's host parent is reachable: not through "..", not through
     * /proc/self/root, not through links the operator left in the input, which resolve in the
     * sandbox's own root (link-hostname reads the sandbox's /etc/hostname, not the host's).
     */
    @Test
    void nothingBesideTheInputIsReachable() throws IOException {
        assertThat(Files.readString(Path.of("/etc/hostname"))).as("the host's hostname differs from the sandbox's").isNotEqualTo("sandbox\n");
        try (Sandbox s = engine.create(withInputs())) {
            String out = pyWalk(s, """
                    token = "%s"
                    base = "%s"
                    sib = base + "/sibling-secret.txt"
                    print(sorted(os.listdir("/inputs/data/..")))
                    print(sorted(os.listdir("/inputs/data/../..")) == sorted(os.listdir("/")))
                    for p in ["/inputs/data/../sibling-secret.txt", "/inputs/../sibling-secret.txt",
                              "/proc/self/root/inputs/data/../sibling-secret.txt", "/proc/1/root/inputs/data/../sibling-secret.txt",
                              sib, "/inputs/data/link-sibling-relative", "/inputs/data/link-sibling-absolute",
                              "/inputs/data/link-shadow", "/inputs/data/link-root" + sib]:
                        attempt(p.replace(base, "<base>"), lambda: open(p).read())
                    print("hostname via link", open("/inputs/data/link-hostname").read(), end="")
                    print("root via link", sorted(os.listdir("/inputs/data/link-root")) == sorted(os.listdir("/")))
                    fd = os.open("/inputs/data", os.O_RDONLY | os.O_DIRECTORY)
                    attempt("openat ..", lambda: os.open("../sibling-secret.txt", os.O_RDONLY, dir_fd=fd))
                    attempt("fchdir ..", lambda: (os.fchdir(fd), os.chdir(".."), print(sorted(os.listdir(".")))))
                    hits = []
                    for root, dirs, files in os.walk("/"):
                        if root == "/":
                            dirs[:] = [d for d in dirs if d not in ("proc", "sys")]
                        hits += [os.path.join(root, n) for n in dirs + files if "sibling-secret" in n]
                        if root.startswith(("/inputs", "/tmp", "/workspace")):
                            for n in files:
                                try:
                                    with open(os.path.join(root, n), "rb") as f:
                                        if token.encode() in f.read(1 << 20):
                                            hits.append(os.path.join(root, n))
                                except OSError:
                                    pass
                    print("hits", hits)
                    """.formatted(siblingToken, base));
            assertThat(out).isEqualTo("""
                    ['data', 'single']
                    True
                    /inputs/data/../sibling-secret.txt: ENOENT No such file or directory
                    /inputs/../sibling-secret.txt: ENOENT No such file or directory
                    /proc/self/root/inputs/data/../sibling-secret.txt: ENOENT No such file or directory
                    /proc/1/root/inputs/data/../sibling-secret.txt: EACCES Permission denied
                    <base>/sibling-secret.txt: ENOENT No such file or directory
                    /inputs/data/link-sibling-relative: ENOENT No such file or directory
                    /inputs/data/link-sibling-absolute: ENOENT No such file or directory
                    /inputs/data/link-shadow: ENOENT No such file or directory
                    /inputs/data/link-root<base>/sibling-secret.txt: %s
                    hostname via link sandbox
                    root via link True
                    openat ..: ENOENT No such file or directory
                    ['data', 'single']
                    fchdir ..: ok
                    hits []
                    """.formatted(gvisor()
                    // This Sentry drops what follows a link to "/" in a path: any path through link-root
                    // opens the sandbox's own root, a directory (EISDIR). No host file is reached either way.
                    ? "EISDIR Is a directory" : "ENOENT No such file or directory"));
        }
    }

    /**
     * A directory with a mount below it on the host is refused: the bind is not recursive, so the
     * mount would not be shown, and the kernel refuses such a bind in a user namespace anyway. The
     * mount itself, named as an input of its own, is shown.
     */
    @Test
    void anInputWithAMountBelowItIsRefusedButTheMountItselfCanBeAnInput() throws Exception {
        Path mountPoint = data.resolve("sub");
        String token = Hostile.token("submount");
        Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=64k,mode=755", "tmpfs", mountPoint.toString())
                .redirectErrorStream(true).start();
        assertThat(mount.waitFor()).as("mount a tmpfs below the input on the host").isZero();
        try {
            Files.writeString(mountPoint.resolve("in-submount.txt"), token);
            Files.setPosixFilePermissions(mountPoint.resolve("in-submount.txt"), PosixFilePermissions.fromString("rw-r--r--"));
            assertRefused(new Input("data", data), AirlockException.Kind.UNAVAILABLE, "has 1 mount(s) below it (" + mountPoint
                    + "), and inputs never show a host's mounts: name a directory without mounts below it, or each mount as an input of its own");
            try (Sandbox s = engine.create(spec().withInputs(List.of(new Input("sub", mountPoint))))) {
                assertThat(py(s, "print(os.listdir('/inputs/sub'), open('/inputs/sub/in-submount.txt').read())")).isEqualTo("['in-submount.txt'] " + token + "\n");
            }
        } finally {
            Process umount = new ProcessBuilder("umount", mountPoint.toString()).redirectErrorStream(true).start();
            assertThat(umount.waitFor()).isZero();
        }
    }

    @Test
    void aSandboxWithoutInputsSeesAnEmptyReadOnlyInputsDirectory() {
        try (Sandbox with = engine.create(withInputs()); Sandbox without = engine.create(spec())) {
            assertThat(py(with, "print(sorted(os.listdir('/inputs')))")).isEqualTo("['data', 'single']\n");
            String out = py(without, """
                    print(os.listdir("/inputs"))
                    attempt("create", lambda: write_to("/inputs/data"))
                    print([l.split()[4] for l in open("/proc/self/mountinfo") if "/inputs" in l.split()[4]])
                    """);
            // gVisor checks the directory's permissions (host root's) before the read-only mount: EACCES.
            assertThat(out).isEqualTo("""
                    []
                    create: %s
                    []
                    """.formatted(gvisor() ? "EACCES Permission denied" : "EROFS Read-only file system"));
        }
    }

    @Test
    void hostPathsInsideAirlocksOwnStateAreRefused() throws IOException {
        Path stateFile = driver.hostStateDirectory().resolve("engines");
        assertThat(stateFile).isDirectory();
        assertRefused(new Input("state", stateFile), AirlockException.Kind.INVALID_ARGUMENT, "lies inside " + driver.hostStateDirectory() + ", which is never shown");
        assertRefused(new Input("state", driver.hostStateDirectory()), AirlockException.Kind.INVALID_ARGUMENT, "is " + driver.hostStateDirectory() + ", which");
        assertRefused(new Input("parent", driver.hostStateDirectory().getParent()), AirlockException.Kind.INVALID_ARGUMENT, "never shown to a sandbox");
        assertRefused(new Input("var", Path.of("/var/lib")), AirlockException.Kind.INVALID_ARGUMENT, "contains /var/lib/airlock");
        assertRefused(new Input("root", Path.of("/")), AirlockException.Kind.INVALID_ARGUMENT, "the host's root directory");
        for (String kernel : List.of("/proc/self", "/proc", "/sys/fs/cgroup", "/dev/null", "/run/runc", "/var/lib/airlock/token")) {
            assertRefused(new Input("k", Path.of(kernel)), AirlockException.Kind.INVALID_ARGUMENT, "never shown to a sandbox");
        }
        // A link the operator named is judged by where it leads.
        Path link = base.resolve("link-to-state");
        Files.createSymbolicLink(link, stateFile);
        try {
            assertRefused(new Input("link", link), AirlockException.Kind.INVALID_ARGUMENT, "a link to " + stateFile);
        } finally {
            Files.delete(link);
        }
    }

    @Test
    void missingUnreadableOrSpecialHostPathsAreRefusedWithWhatToDo() throws IOException {
        assertRefused(new Input("missing", base.resolve("no-such-dir")), AirlockException.Kind.UNAVAILABLE,
                "does not exist on the host: create it, or correct the input's path in the policy");
        assertRefused(new Input("private", data.resolve("owner-only.txt")), AirlockException.Kind.UNAVAILABLE,
                "is not readable by the sandbox: the sandbox's user counts as 'others' on the host");
        Path closed = Files.createDirectory(base.resolve("closed"));
        Files.setPosixFilePermissions(closed, PosixFilePermissions.fromString("rwx--x--x"));
        assertRefused(new Input("closed", closed), AirlockException.Kind.UNAVAILABLE, "rwx--x--x; make it readable by others (chmod o+rx)");
        Path socket = base.resolve("host.sock");
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(socket));
            assertRefused(new Input("sock", socket), AirlockException.Kind.INVALID_ARGUMENT, "neither a regular file nor a directory");
        } finally {
            Files.deleteIfExists(socket);
        }
    }

    private void assertRefused(Input input, AirlockException.Kind kind, String message) {
        SandboxSpec spec = spec().withInputs(List.of(input));
        assertThatThrownBy(() -> engine.driver().check(spec, List.of()))
                .isInstanceOfSatisfying(AirlockException.class, e -> assertThat(e.kind()).isEqualTo(kind))
                .hasMessageContaining(message);
        int live = engine.liveCount();
        assertThatThrownBy(() -> engine.create(spec).close())
                .isInstanceOfSatisfying(AirlockException.class, e -> assertThat(e.kind()).isEqualTo(kind))
                .hasMessageContaining("input '" + input.name() + "'")
                .hasMessageContaining(message);
        assertThat(engine.liveCount()).isEqualTo(live);
    }

    /** The warm pool holds default sandboxes only: a spec with inputs is always created cold, for itself. */
    @Test
    void aSpecWithInputsNeverGetsAPooledSandbox() throws InterruptedException {
        try (Engine pooled = new Engine(driver.newDriver(), 1, spec())) {
            assertThat(pooled.awaitQuiet(Duration.ofSeconds(30))).isTrue();
            try (Sandbox s = pooled.create(withInputs())) {
                assertThat(pooled.warmPoolReady()).as("the pooled sandbox is still waiting").isEqualTo(1);
                assertThat(py(s, "print(sorted(os.listdir('/inputs')))")).isEqualTo("['data', 'single']\n");
            }
        }
        try (IsolationDriver isolation = driver.newDriver()) {
            assertThatThrownBy(() -> new Engine(isolation, 1, withInputs()))
                    .isInstanceOf(AirlockException.class).hasMessageContaining("warm pool cannot hold sandboxes with inputs");
        }
    }

    /** Input mounts live only in the sandbox's mount namespace: none ever shows in the host's. */
    @Test
    void noInputMountIsLeftOnTheHost() throws IOException {
        String prefix;
        try (Sandbox s = engine.create(withInputs())) {
            prefix = s.id().value();
            assertThat(hostMountsOf(base)).isEmpty();
        }
        assertThat(hostMountsOf(base)).isEmpty();
        assertThat(driver.leftovers(prefix)).isEmpty();
    }

    private static List<String> hostMountsOf(Path dir) throws IOException {
        return Files.readAllLines(Path.of("/proc/self/mountinfo")).stream().filter(l -> l.contains(dir.toString())).toList();
    }
}
