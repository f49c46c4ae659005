package dev.airlock.core.contract;

import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;


import static dev.airlock.core.contract.Hostile.PRELUDE;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two sandboxes alive at once run as the same host uid: only their namespaces and mounts keep them
 * apart. Neither sees, signals or talks to the other: processes, files, abstract unix sockets,
 * loopback ports and System V IPC are all private.
 */
public abstract class CrossSandboxContract extends ContractTestBase {

    protected CrossSandboxContract(DriverContract driver) {
        super(driver);
    }

    private static ExecResult py(Sandbox sandbox, String body) {
        return ok(sandbox.exec(ExecRequest.of("python3", "-c", PRELUDE + body)));
    }

    @Test
    @Tag("smoke")   // the files case walks the whole tree: minutes on a guest
    void liveSandboxesCannotSeeOrSignalEachOthersProcesses() {
        String marker = "1003." + (System.nanoTime() % 1_000_000);
        try (Sandbox a = engine.create(spec()); Sandbox b = engine.create(spec())) {
            ok(a.exec(ExecRequest.of("sh", "-c", "nohup setsid sleep " + marker + " </dev/null >/dev/null 2>&1 &")));
            String seenByA = py(a, """
                    procs = [open(f"/proc/{p}/cmdline").read().replace("\\0", " ") for p in os.listdir("/proc") if p.isdigit()]
                    print(sum(c.strip() == "sleep " + "%s"[::-1] for c in procs))
                    """.formatted(reversed(marker))).stdoutText();
            assertThat(seenByA).as("a sees its own sleeper").isEqualTo("1\n");
            // b signals everything it may: that is its own execution's supervisor too, so b's
            // execution ends with it, killed, and never gets past the sleep.
            ExecResult b1 = b.exec(ExecRequest.of("python3", "-c", PRELUDE + """
                    import time
                    procs = [open(f"/proc/{p}/cmdline").read().replace("\\0", " ") for p in os.listdir("/proc") if p.isdigit()]
                    print(sum(c.strip() == "sleep " + "%s"[::-1] for c in procs), len(procs), flush=True)
                    os.kill(-1, 9)
                    time.sleep(10)
                    print("survived")
                    """.formatted(reversed(marker))));
            assertThat(b1.stdoutText()).as("b sees only its agent, its spare supervisors, its supervisor and itself")
                    .isEqualTo("0 " + (3 + driver.spareSupervisors()) + "\n");
            assertThat(b1.exitCode()).as("b's kill(-1, SIGKILL) ended b's own execution: %s", b1).isEqualTo(137);
            String stillThere = py(a, """
                    procs = [open(f"/proc/{p}/cmdline").read().replace("\\0", " ") for p in os.listdir("/proc") if p.isdigit()]
                    print(sum(c.strip() == "sleep " + "%s"[::-1] for c in procs))
                    """.formatted(reversed(marker))).stdoutText();
            assertThat(stillThere).as("b's kill(-1, SIGKILL) did not reach a's sleeper").isEqualTo("1\n");
        }
    }

    @Test
    void liveSandboxesCannotSeeEachOthersFiles() {
        String name = Hostile.token("file");
        try (Sandbox a = engine.create(spec()); Sandbox b = engine.create(spec())) {
            String wrote = py(a, """
                    for d in ["/tmp", "/workspace", "/dev/shm"]:
                        write_to(os.path.join(d, "%s"))
                    print(all(os.path.exists(os.path.join(d, "%s")) for d in ["/tmp", "/workspace", "/dev/shm"]))
                    """.formatted(name, name)).stdoutText();
            assertThat(wrote).isEqualTo("True\n");
            String seen = ok(b.exec(ExecRequest.of("python3", "-c", PRELUDE + """
                    hits = []
                    for root, dirs, files in os.walk("/"):
                        if root == "/":
                            dirs[:] = [d for d in dirs if d != "proc"]
                        hits += [os.path.join(root, n) for n in dirs + files if "%s" in n]
                    print(hits)
                    """.formatted(name)).withTimeout(treeWalkTimeout()))).stdoutText();
            assertThat(seen).isEqualTo("[]\n");
        }
    }

    /** Abstract unix sockets belong to the network namespace: b cannot reach a's, a can. */
    @Test
    void abstractUnixSocketOfAnotherSandboxIsUnreachable() {
        String name = Hostile.token("sock");
        try (Sandbox a = engine.create(spec()); Sandbox b = engine.create(spec())) {
            listenInBackground(a, """
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.bind("\\0%s")
                    """.formatted(name));
            String fromB = py(b, """
                    import socket
                    attempt("connect", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect("\\0%s"))
                    """.formatted(name)).stdoutText();
            assertThat(fromB).isEqualTo("connect: ECONNREFUSED Connection refused\n");
            String fromA = py(a, """
                    import socket
                    attempt("connect", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect("\\0%s"))
                    """.formatted(name)).stdoutText();
            assertThat(fromA).as("the listener is there").isEqualTo("connect: ok\n");
        }
    }

    /** Each sandbox has its own lo: a port open in a is closed in b. */
    @Test
    void loopbackPortOfAnotherSandboxIsUnreachable() {
        try (Sandbox a = engine.create(spec()); Sandbox b = engine.create(spec())) {
            listenInBackground(a, """
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind(("127.0.0.1", 7777))
                    """);
            String connect = """
                    import socket
                    def c():
                        s = socket.socket(); s.settimeout(5); s.connect(("127.0.0.1", 7777))
                    attempt("connect", c)
                    """;
            assertThat(py(b, connect).stdoutText()).isEqualTo("connect: ECONNREFUSED Connection refused\n");
            assertThat(py(a, connect).stdoutText()).as("the listener is there").isEqualTo("connect: ok\n");
        }
    }

    /** System V IPC is per IPC namespace: a segment made in a does not exist in b. */
    @Test
    void sysvSharedMemoryOfAnotherSandboxIsInvisible() {
        try (Sandbox a = engine.create(spec()); Sandbox b = engine.create(spec())) {
            String shmget = """
                    libc.shmget.restype = ctypes.c_int
                    ctypes.set_errno(0)
                    r = libc.shmget(0x41524c4b, %s)
                    print("ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])
                    """;
            assertThat(py(a, shmget.formatted("4096, 0o1600")).stdoutText()).as("a creates it (IPC_CREAT)").isEqualTo("ok\n");
            assertThat(py(a, shmget.formatted("0, 0")).stdoutText()).as("a finds it again").isEqualTo("ok\n");
            assertThat(py(b, shmget.formatted("0, 0")).stdoutText()).as("b does not").isEqualTo("ENOENT\n");
            if (gvisor()) {
                // The Sentry's /proc has no sysvipc tables at all: b has nothing to list a's segment in.
                assertThat(py(b, "attempt('table', lambda: open('/proc/sysvipc/shm'))").stdoutText()).isEqualTo("table: ENOENT No such file or directory\n");
            } else {
                assertThat(py(b, "print(open('/proc/sysvipc/shm').read().count('\\n'))").stdoutText()).as("b's table has only its header").isEqualTo("1\n");
            }
        }
    }

    /**
     * The kernel charges inotify instances (and watches, and user namespaces) up the user-namespace
     * chain to each namespace's creator. Each sandbox's namespace is created by its own host uid
     * (the OCI driver's SandboxUserNamespace), not by runc as host root, so one sandbox that takes
     * all of fs.inotify.max_user_instances (128 by default), and keeps them in a daemon, leaves
     * every other sandbox its own.
     */
    @Test
    void oneSandboxCannotExhaustAnotherSandboxsInotifyInstances() {
        try (Sandbox a = engine.create(spec()); Sandbox b = engine.create(spec())) {
            String held = py(a, """
                    n = 0
                    while libc.inotify_init1(0) >= 0:
                        n += 1
                    print("held", n, errno.errorcode[ctypes.get_errno()], flush=True)
                    if os.fork() == 0:
                        os.setsid()
                        null = os.open("/dev/null", os.O_RDWR)
                        for fd in (0, 1, 2):
                            os.dup2(null, fd)
                        import time
                        time.sleep(30)
                    os._exit(0)
                    """).stdoutText();
            assertThat(held).as("a took every instance it could").startsWith("held ").endsWith(" EMFILE\n");
            String inB = py(b, """
                    fd = libc.inotify_init1(0)
                    print("ok" if fd >= 0 else errno.errorcode[ctypes.get_errno()])
                    """).stdoutText();
            assertThat(inB).as("b still gets an inotify instance").isEqualTo("ok\n");
        }
    }

    private static String reversed(String s) {
        return new StringBuilder(s).reverse().toString();
    }

    /** Starts a listener that outlives the exec: binds (given code defines {@code s}), listens, forks, and the parent returns. */
    private static void listenInBackground(Sandbox sandbox, String bind) {
        py(sandbox, """
                import socket, time
                %s
                s.listen(8)
                if os.fork() == 0:
                    os.setsid()
                    null = os.open("/dev/null", os.O_RDWR)
                    for fd in (0, 1, 2):
                        os.dup2(null, fd)
                    s.settimeout(30)
                    try:
                        while True:
                            s.accept()[0].close()
                    except Exception:
                        os._exit(0)
                print("listening")
                """.formatted(bind));
    }
}
