package dev.airlock.oci;

import dev.airlock.core.EndReason;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.HostFiles;
import dev.airlock.core.Input;
import dev.airlock.core.KernelFiles;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.OutputListener;
import dev.airlock.core.RunRequest;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.egress.EgressBroker;
import dev.airlock.egress.EgressSettings;
import dev.airlock.egress.EgressRecord;
import dev.airlock.egress.LocalServers;
import dev.airlock.egress.TestTls;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

/**
 * The gVisor tier: the main features of the OCI driver under {@code runsc}, each in a real sandbox,
 * and nothing of any of them left afterwards. Where gVisor gives a control in its own way (the
 * memory limit, the kernel seen inside) the test asserts gVisor's behaviour, so that a change in it
 * is noticed. Never skipped: bin/test installs runsc; without it the class fails saying so.
 */
class RunscDriverTest {

    static final OciDriverConfig CONFIG = OciDriverConfig.defaults().withRuntime("runsc");

    @TempDir
    static Path tmp;
    static Engine engine;
    static LocalServers servers;
    static ServerSocket airlockServer;
    static final List<EgressRecord> records = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void openEngine() throws Exception {
        if (OciRuntime.locate("runsc") == null) {
            fail("runsc (gVisor) is not installed on this host: install it (apt-get install runsc; bin/test does it) to test the gVisor tier");
        }
        servers = new LocalServers(TestTls.create(tmp, "test.example"));
        airlockServer = new ServerSocket(0, 5, InetAddress.getLoopbackAddress());
        EgressSettings egress = EgressSettings.DEFAULTS
                .withServerAddresses(Set.of(new InetSocketAddress(InetAddress.getLoopbackAddress(), airlockServer.getLocalPort())))
                .withListener(records::add);
        engine = new Engine(new OciDriver(CONFIG), new EgressBroker(egress));
    }

    @AfterAll
    static void closeEngineAndCheckNothingLeaked() throws Exception {
        if (engine == null) {
            return;
        }
        String prefix = "al-" + engine.driver().instance() + "-";
        engine.close();
        servers.close();
        airlockServer.close();
        assertThat(new LeakCheck(CONFIG).find(prefix)).as("leftovers of this test class's runsc sandboxes").isEmpty();
    }

    static ExecResult ok(ExecResult r) {
        assertThat(r.endReason()).as("end reason; stdout: %s; stderr: %s", r.stdoutText(), r.stderrText()).isEqualTo(EndReason.EXITED);
        assertThat(r.exitCode()).as("exit code; stdout: %s; stderr: %s", r.stdoutText(), r.stderrText()).isZero();
        return r;
    }

    static ExecResult run(Language language, String code, Limits limits) {
        return engine.run(new RunRequest(language, code, null, new SandboxSpec(SandboxSpec.SYSTEM_IMAGE, limits, Map.of()))).result();
    }

    @Test
    void oneShotPythonRunsUnderGvisorsKernel() {
        assertThat(engine.driver().name()).isEqualTo("oci/runsc");
        ExecResult r = ok(run(Language.PYTHON, "print(6*7)", Limits.DEFAULTS));
        assertThat(r.stdoutText()).isEqualTo("42\n");
        // The kernel the code sees is the Sentry, not the host's: gVisor reports its own release.
        String hostRelease = KernelFiles.readOrEmpty(Path.of("/proc/sys/kernel/osrelease")).strip();
        ExecResult uname = ok(run(Language.SH, "uname -r; id -u; cat /proc/self/status | grep -c NoNewPrivs || true", Limits.DEFAULTS));
        List<String> lines = uname.stdoutText().lines().toList();
        assertThat(lines.get(0)).isNotEqualTo(hostRelease);
        assertThat(lines.get(1)).isEqualTo("1000");
    }

    @Test
    void execStreamsOutputWhileTheProgramRuns() throws Exception {
        CountDownLatch firstLine = new CountDownLatch(1);
        try (Sandbox sandbox = engine.create(SandboxSpec.defaults())) {
            CompletableFuture<ExecResult> done = CompletableFuture.supplyAsync(() -> sandbox.exec(
                    ExecRequest.of("sh", "-c", "echo first; while [ ! -e /tmp/go ]; do sleep 0.05; done; echo second"),
                    new OutputListener() {
                        @Override
                        public void stdout(byte[] chunk) {
                            firstLine.countDown();
                        }
                    }));
            assertThat(firstLine.await(30, TimeUnit.SECONDS)).isTrue();
            assertThat(done).isNotDone();
            sandbox.writeFile("/tmp/go", new byte[0]);
            assertThat(done.get(30, TimeUnit.SECONDS).stdoutText()).isEqualTo("first\nsecond\n");
            // The session lives on: a second execution in the same sandbox sees the first one's file.
            assertThat(ok(sandbox.exec(ExecRequest.of("sh", "-c", "test -e /tmp/go && echo there"))).stdoutText()).isEqualTo("there\n");
        }
    }

    /**
     * Memory state: a Python process holding a variable only in its memory goes on, with it, in the
     * checkpointed sandbox (reconnected) and in a new sandbox restored from the checkpoint image, as do
     * the in-memory files of /workspace. The process writes x to a file only when asked, after the
     * checkpoint, so the value can come from nowhere but its memory.
     */
    @Test
    void aPythonProcessKeepsItsVariableThroughCheckpointAndRestore() throws Exception {
        Path image = Files.createDirectories(tmp.resolve("checkpoint"));
        String program = """
                import os, time
                x = 6 * 7
                while True:
                    if os.path.exists('/tmp/ask'):
                        open('/tmp/x', 'w').write(str(x))
                        os.remove('/tmp/ask')
                    time.sleep(0.05)
                """;
        String ask = "touch /tmp/ask; while [ -e /tmp/ask ]; do sleep 0.05; done; cat /tmp/x; rm /tmp/x";
        SandboxSpec spec = SandboxSpec.defaults();
        String pid;
        try (Sandbox original = engine.create(spec)) {
            original.writeFile("/workspace/p.py", program.getBytes(StandardCharsets.UTF_8));
            original.writeFile("/workspace/note.txt", "kept".getBytes(StandardCharsets.UTF_8));
            ok(original.exec(ExecRequest.of("sh", "-c", "python3 /workspace/p.py >/dev/null 2>&1 &")));
            pid = ok(original.exec(ExecRequest.of("sh", "-c", "sleep 0.5; pgrep -f ^python3"))).stdoutText().strip();
            original.checkpoint(image);
            assertThat(image.resolve("checkpoint.img")).isNotEmptyFile();
            // the original runs on, its agent reconnected
            assertThat(ok(original.exec(ExecRequest.of("sh", "-c", ask))).stdoutText()).isEqualTo("42");
            // the agent's new socket has a random name that code inside cannot list, so cannot race it to
            assertThat(original.exec(ExecRequest.of("ls", "/run/airlock")).exitCode()).as("listing /run/airlock").isNotZero();
        }
        try (Sandbox restored = engine.restore(spec, image)) {
            assertThat(ok(restored.exec(ExecRequest.of("sh", "-c", "cat /workspace/note.txt; echo; pgrep -f ^python3"))).stdoutText())
                    .isEqualTo("kept\n" + pid + "\n");
            assertThat(ok(restored.exec(ExecRequest.of("sh", "-c", ask))).stdoutText()).isEqualTo("42");
        }
    }

    @Test
    void filesRoundTrip() throws Exception {
        byte[] content = new byte[300_000];
        for (int i = 0; i < content.length; i++) {
            content[i] = (byte) (i * 31 + 7);
        }
        try (Sandbox sandbox = engine.create(SandboxSpec.defaults())) {
            sandbox.writeFile("/workspace/in.bin", content);
            ok(sandbox.exec(ExecRequest.of("sh", "-c", "cp /workspace/in.bin /workspace/out.bin")));
            ByteArrayOutputStream back = new ByteArrayOutputStream();
            sandbox.files().readFile("/workspace/out.bin", 1 << 20, back);
            assertThat(back.toByteArray()).isEqualTo(content);
            // The root stays unwritable. gVisor checks permissions before the read-only mount, so the
            // sandbox user gets EACCES where runc gives EROFS; either way nothing is written.
            ExecResult ro = sandbox.exec(ExecRequest.of("sh", "-c", "echo x > /usr/bin/evil; test -e /usr/bin/evil && echo written"));
            assertThat(ro.stdoutText()).isEmpty();
            assertThat(ro.stderrText()).contains("/usr/bin/evil: Permission denied");
        }
    }

    @Test
    void inputsAreReadableAndReadOnly() throws Exception {
        // createTempDirectory gives 0700: only host root (runsc's gofer) traverses the input's parent.
        Path base = Files.createTempDirectory("airlock-runsc-inputs-");
        try {
            Path data = Files.createDirectory(base.resolve("data"));
            Files.writeString(data.resolve("hello.txt"), "hello from the host\n");
            Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwxr-xr-x"));
            Files.setPosixFilePermissions(data.resolve("hello.txt"), PosixFilePermissions.fromString("rw-r--r--"));
            try (Sandbox sandbox = engine.create(SandboxSpec.defaults().withInputs(List.of(new Input("data", data))))) {
                ExecResult r = ok(sandbox.exec(ExecRequest.of("/usr/bin/python3", "-c", """
                        import os
                        print(open("/inputs/data/hello.txt").read(), end="")
                        for attempt in (lambda: open("/inputs/data/hello.txt", "a"), lambda: open("/inputs/data/new", "w")):
                            try:
                                attempt(); print("written")
                            except OSError as e:
                                print("refused")
                        """)));
                assertThat(r.stdoutText()).isEqualTo("hello from the host\nrefused\nrefused\n");
            }
            assertThat(Files.readString(data.resolve("hello.txt"))).isEqualTo("hello from the host\n");
            assertThat(data.resolve("new")).doesNotExist();
        } finally {
            HostFiles.deleteTree(base);
        }
    }

    @Test
    void egressReachesAnAllowedUpstreamThroughTheAgentsBridgeAndNothingElse() {
        NetworkPolicy policy = NetworkPolicy.of(List.of(Destination.of("test.example")), List.of(), List.of(new AddressRange("127.0.0.0/8")),
                Map.of("test.example", List.of("127.0.0.1")));
        try (Sandbox sandbox = engine.create(SandboxSpec.defaults().withNetwork(policy))) {
            sandbox.writeFile("/tmp/t.py", ("""
                    import urllib.request, urllib.error, socket
                    print(urllib.request.urlopen("http://test.example:%d/through-gvisor").read().decode().splitlines()[0])
                    try:
                        urllib.request.urlopen("http://denied.example:%d/")
                        print("denied.example reached")
                    except urllib.error.HTTPError as e:
                        print("denied.example", e.code)
                    try:
                        socket.create_connection(("10.1.2.3", 80), timeout=3)
                        print("direct reached")
                    except OSError as e:
                        print("direct refused")
                    """).formatted(servers.httpPort(), servers.httpPort()).getBytes(StandardCharsets.UTF_8));
            ExecResult r = ok(sandbox.exec(ExecRequest.of("/usr/bin/python3", "/tmp/t.py").withTimeout(Duration.ofSeconds(60))));
            assertThat(r.stdoutText()).isEqualTo("request GET /through-gvisor\ndenied.example 403\ndirect refused\n");
            // after a checkpoint (the sandbox restored in place) the agent's bridge still reaches the proxy
            try {
                sandbox.checkpoint(Files.createTempDirectory(tmp, "egress-checkpoint"));
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            ExecResult again = ok(sandbox.exec(ExecRequest.of("/usr/bin/python3", "/tmp/t.py").withTimeout(Duration.ofSeconds(60))));
            assertThat(again.stdoutText()).isEqualTo(r.stdoutText());
        }
        assertThat(records).anySatisfy(rec -> {
            assertThat(rec.destination()).isEqualTo("test.example");
            assertThat(rec.allowed()).isTrue();
        });
        assertThat(records).anySatisfy(rec -> {
            assertThat(rec.destination()).isEqualTo("denied.example");
            assertThat(rec.allowed()).isFalse();
        });
    }

    /**
     * gVisor's way: the memory limit is the host cgroup of the whole sandbox (Sentry and gofer), so
     * going over it kills the sandbox, not one process in it; the execution ends out of memory, says
     * that the sandbox went with it, and the sandbox is gone. A program inside the limit runs normally.
     */
    @Test
    void memoryLimitHoldsByEndingTheWholeSandbox() {
        Limits limits = Limits.DEFAULTS.withMemoryBytes(64L << 20);
        ExecResult within = run(Language.PYTHON, """
                b = bytearray(30 << 20)
                for i in range(0, len(b), 4096): b[i] = 1
                print("ok")
                """, limits);
        assertThat(ok(within).stdoutText()).isEqualTo("ok\n");
        try (Sandbox sandbox = engine.create(SandboxSpec.defaults().withLimits(limits))) {
            sandbox.writeFile("/tmp/bomb.py", """
                    b = []
                    print("allocating", flush=True)
                    while True: b.append(bytearray(1 << 20))
                    """.getBytes(StandardCharsets.UTF_8));
            ExecResult bomb = sandbox.exec(ExecRequest.of("/usr/bin/python3", "/tmp/bomb.py").withTimeout(Duration.ofSeconds(60)));
            assertThat(bomb.endReason()).as(bomb.toString()).isEqualTo(EndReason.OOM_KILLED);
            assertThat(bomb.message()).endsWith("and the whole sandbox ended with it");
            assertThat(bomb.stdoutText()).isEqualTo("allocating\n");
            assertThatThrownBy(() -> sandbox.exec(ExecRequest.of("true"))).as("the sandbox died with its Sentry").isNotNull();
        }
    }

    /**
     * gVisor's way: the pids limit bounds the Sentry's and gofer's host threads (the limit plus
     * {@link OciConfig#GVISOR_HOST_THREADS}); a fork bomb exhausts them and the whole sandbox ends
     * with its agent (agent_killed).
     */
    @Test
    void pidsLimitHoldsByEndingTheWholeSandbox() {
        ExecResult r = run(Language.PYTHON, """
                import os, time
                while True:
                    if os.fork() == 0:
                        time.sleep(30)
                        os._exit(0)
                """, Limits.DEFAULTS.withPids(16).withTimeout(Duration.ofSeconds(60)));
        assertThat(r.endReason()).as(r.toString()).isEqualTo(EndReason.AGENT_KILLED);
    }

    /**
     * Threads start: glibc's pthread_create tries clone3 first and falls back to clone only on
     * ENOSYS, which the gVisor bundle leaves to the Sentry to answer (runsc would turn the filter's
     * ENOSYS into EPERM). Namespace flags on clone and unshare stay refused.
     */
    @Test
    void threadsStartAndNamespacesStayRefused() {
        ExecResult r = ok(run(Language.PYTHON, """
                import ctypes, threading
                t = threading.Thread(target=print, args=("thread ok",)); t.start(); t.join()
                libc = ctypes.CDLL(None, use_errno=True)
                print("clone3", libc.syscall(435, 0, 0), ctypes.get_errno())
                print("unshare", libc.syscall(272, 0x10000000), ctypes.get_errno())
                """, Limits.DEFAULTS));
        assertThat(r.stdoutText()).isEqualTo("thread ok\nclone3 -1 38\nunshare -1 1\n");
    }

    @Test
    void timeoutKillsTheExecutionAndKeepsEarlierOutput() {
        ExecResult r = run(Language.SH, "echo before; sleep 1000", Limits.DEFAULTS.withTimeout(Duration.ofMillis(1500)));
        assertThat(r.endReason()).isEqualTo(EndReason.TIMED_OUT);
        assertThat(r.stdoutText()).isEqualTo("before\n");
        assertThat(r.message()).isEqualTo("timed out after 1500ms and was killed");
    }

    /**
     * Sandbox processes are Sentry tasks, so an execution gets no host cgroup of its own; its
     * timeout still ends everything it started, a process that left its process group (setsid)
     * too: the agent kills the whole tree below the execution's supervisor.
     */
    @Test
    void aSetsidProcessDiesWithItsExecutionsTimeout() {
        try (Sandbox sandbox = engine.create(SandboxSpec.defaults())) {
            ExecResult r = sandbox.exec(ExecRequest.of("sh", "-c", "setsid sleep 4711.5 </dev/null >/dev/null 2>&1 & echo started; sleep 1000")
                    .withTimeout(Duration.ofSeconds(2)));
            assertThat(r.endReason()).isEqualTo(EndReason.TIMED_OUT);
            ExecResult left = ok(sandbox.exec(ExecRequest.of("/usr/bin/python3", "-c",
                    "import os; m = '4711' + '.5'; print(sum(m in open(f'/proc/{p}/cmdline').read() for p in os.listdir('/proc') if p.isdigit()))")));
            assertThat(left.stdoutText()).as("the setsid'd process after its execution's timeout").isEqualTo("0\n");
        }
        // closeEngineAndCheckNothingLeaked then proves the sandbox, Sentry and all, is gone.
    }

    @Test
    void warmPoolHandsOutFreshRunscSandboxes() {
        SandboxSpec spec = SandboxSpec.defaults();
        try (Engine pooled = new Engine(new OciDriver(CONFIG), 1, spec)) {
            String prefix = "al-" + pooled.driver().instance() + "-";
            String first;
            try (Sandbox s = pooled.create(spec)) {
                first = s.id().value();
                ok(s.exec(ExecRequest.of("sh", "-c", "echo secret > /workspace/left-behind")));
            }
            try (Sandbox s = pooled.create(spec)) {
                assertThat(s.id().value()).isNotEqualTo(first);
                // Not ls: coreutils 9 calls statx with AT_NO_AUTOMOUNT, which this gVisor release refuses (EINVAL).
                assertThat(ok(s.exec(ExecRequest.of("/usr/bin/python3", "-c", "import os; print(os.listdir('/workspace'))"))).stdoutText())
                        .isEqualTo("[]\n");
            }
            pooled.close();
            assertThat(new LeakCheck(CONFIG).find(prefix)).as("leftovers of the pooled engine").isEmpty();
        }
    }
}
