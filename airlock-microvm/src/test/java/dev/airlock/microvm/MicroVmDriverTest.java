package dev.airlock.microvm;

import dev.airlock.core.AirlockException;
import dev.airlock.core.DriverProvider;
import dev.airlock.core.DriverSettings;
import dev.airlock.core.EndReason;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Input;
import dev.airlock.core.Isolation;
import dev.airlock.core.IsolationDriver;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Boots real guests under QEMU (software emulation on this host, several seconds a boot, so as few
 * as possible) and drives them through the agent as the engine does: commands, exit codes, files.
 * After a guest is destroyed neither its QEMU nor its directory may remain.
 */
class MicroVmDriverTest {

    static MicroVmDriver driver;
    static Engine engine;

    @BeforeAll
    static void openEngine() {
        driver = new MicroVmDriver(MicroVmDriverConfig.defaults());
        engine = new Engine(driver);
    }

    @AfterAll
    static void closeEngine() {
        String instance = driver.instance();
        engine.close();
        assertThat(qemuProcessesOf("/engines/" + instance + "/")).as("QEMU processes of this test's driver instance").isEmpty();
        assertThat(MicroVmDriverConfig.defaults().stateRoot().resolve("engines").resolve(instance)).doesNotExist();
    }

    @Test
    void aGuestRunsCommandsThroughItsAgentWithItsOwnKernelAndLeavesNothingWhenDestroyed() throws Exception {
        long bootStart = System.nanoTime();
        Sandbox sandbox = engine.create(SandboxSpec.defaults());
        long bootMillis = (System.nanoTime() - bootStart) / 1_000_000;
        Path dir = MicroVmDriverConfig.defaults().stateRoot().resolve("engines").resolve(driver.instance()).resolve("sandboxes")
                .resolve(sandbox.id().value());
        try {
            assertThat(dir).isDirectory();
            assertThat(qemuProcessesOf(dir + "/")).hasSize(1);
            // QEMU's CPU time to HELLO (and a little after): on a loaded host a steadier figure than the wall time.
            long bootCpuMillis = cpuMillis(qemuProcessesOf(dir + "/").getFirst());
            assertJailed(qemuProcessesOf(dir + "/").getFirst(), sandbox.id().value());
            // What airlock leaks would report if this guest were left behind: its QEMU, its cgroups, its uid, its engine's state.
            List<String> wouldLeak = MicroVmLeakCheck.findAll(MicroVmDriverConfig.defaults().stateRoot());
            assertThat(wouldLeak).anyMatch(l -> l.equals("microvm: QEMU process " + qemuProcessesOf(dir + "/").getFirst().pid()
                    + " of instance " + driver.instance()));
            assertThat(wouldLeak).anyMatch(l -> l.startsWith("microvm: QEMU cgroup ") && l.endsWith("/" + sandbox.id().value()));
            assertThat(wouldLeak).anyMatch(l -> l.startsWith("microvm: QEMU uid claimed "));
            assertThat(wouldLeak).anyMatch(l -> l.endsWith("/engines/" + driver.instance()));

            // An engine on another state root, in another process (verify's scenarios, a second server), reaps its own
            // dead guests, never this one.
            Path otherRoot = Files.createTempDirectory("alr");
            try {
                Process other = new ProcessBuilder(ProcessHandle.current().info().command().orElseThrow(), "-cp",
                        System.getProperty("java.class.path"), ReapElsewhere.class.getName(), otherRoot.toString())
                        .redirectErrorStream(true).start();
                String reaped = new String(other.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertThat(other.waitFor()).as(reaped).isZero();
                assertThat(reaped).doesNotContain(sandbox.id().value()).doesNotContain(driver.instance());
            } finally {
                dev.airlock.core.HostFiles.deleteTree(otherRoot);
            }
            assertThat(qemuProcessesOf(dir + "/")).as("the guest lives on").hasSize(1);

            long echoStart = System.nanoTime();
            ExecResult echo = exec(sandbox, "echo", "hello");
            long firstEchoMillis = (System.nanoTime() - echoStart) / 1_000_000;
            assertThat(echo.stdoutText()).isEqualTo("hello\n");
            assertThat(echo.exitCode()).isZero();
            echoStart = System.nanoTime();
            exec(sandbox, "echo", "hello");
            long secondEchoMillis = (System.nanoTime() - echoStart) / 1_000_000;

            // The guest's own kernel, not the host's; the code runs as the unprivileged sandbox user.
            long pythonStart = System.nanoTime();
            ExecResult python = exec(sandbox, "python3", "-c", "import os, platform; print(platform.release(), os.getuid())");
            long pythonMillis = (System.nanoTime() - pythonStart) / 1_000_000;
            System.out.printf("microvm: boot to HELLO (engine.create) %d ms (QEMU's CPU time %d ms, load average %.1f), first echo %d ms,"
                    + " second echo %d ms, python3 one-liner %d ms%n", bootMillis, bootCpuMillis,
                    java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(), firstEchoMillis,
                    secondEchoMillis, pythonMillis);
            assertThat(python.stdoutText().strip()).isEqualTo(driver.guestKernelRelease() + " 1000");
            assertThat(driver.guestKernelRelease()).isNotEqualTo(System.getProperty("os.version"));

            ExecResult failing = exec(sandbox, "sh", "-c", "echo oops >&2; exit 3");
            assertThat(failing.endReason()).isEqualTo(EndReason.EXITED);
            assertThat(failing.exitCode()).isEqualTo(3);
            assertThat(failing.stderrText()).isEqualTo("oops\n");

            sandbox.writeFile("/workspace/note.txt", "written by the host\n".getBytes(StandardCharsets.UTF_8));
            assertThat(exec(sandbox, "cat", "/workspace/note.txt").stdoutText()).isEqualTo("written by the host\n");
            assertThat(exec(sandbox, "sh", "-c", "echo written by the guest > /tmp/out.txt").exitCode()).isZero();
            ByteArrayOutputStream read = new ByteArrayOutputStream();
            sandbox.files().readFile("/tmp/out.txt", 1024, read);
            assertThat(read.toString(StandardCharsets.UTF_8)).isEqualTo("written by the guest\n");

            // The guest as a container is: no capabilities at all, loopback up and nothing else, no /sys,
            // the image's files refused to the sandbox user before the read-only mount is even asked.
            ExecResult facts = exec(sandbox, "python3", "-c", """
                    import errno, os, socket
                    print([l.split()[1] for l in open('/proc/self/status') if l.startswith(('CapBnd', 'CapEff', 'NoNewPrivs'))])
                    s = socket.socket()
                    print(errno.errorcode[s.connect_ex(('127.0.0.1', 1))])
                    print(sorted(os.listdir('/sys/class/net')) if os.path.exists('/sys') else 'no /sys')
                    try:
                        open('/usr/bin/env', 'ab')
                    except OSError as e:
                        print(errno.errorcode[e.errno])
                    """);
            assertThat(facts.stdoutText()).as(facts.stderrText())
                    .isEqualTo("['0000000000000000', '0000000000000000', '1']\nECONNREFUSED\nno /sys\nEACCES\n");

            // The image is the host's /usr, read-only; nothing else of the host is writable either.
            ExecResult readOnly = exec(sandbox, "sh", "-c", "touch /usr/x || touch /etc/x || touch /x || echo refused");
            assertThat(readOnly.stdoutText()).endsWith("refused\n");
        } finally {
            sandbox.close();
        }
        assertThat(qemuProcessesOf(dir + "/")).as("QEMU of the destroyed guest").isEmpty();
        assertThat(dir).doesNotExist();
        assertThat(VmmJail.allCgroups()).as("cgroups of the destroyed guest's QEMU")
                .noneMatch(c -> c.getFileName().toString().equals(sandbox.id().value()));
        assertThat(MicroVmLeakCheck.findAll(MicroVmDriverConfig.defaults().stateRoot()))
                .noneMatch(l -> l.contains(sandbox.id().value()));
    }

    /**
     * The QEMU of a guest runs jailed: not as root, with no capabilities, in mount, pid, network,
     * IPC and UTS namespaces other than the host's, in a root of its own, in cgroups whose memory,
     * pids and cpu limits are set.
     */
    private static void assertJailed(ProcessHandle qemu, String sandboxId) throws Exception {
        Path proc = Path.of("/proc", Long.toString(qemu.pid()));
        List<String> status = Files.readAllLines(proc.resolve("status"));
        String uids = status.stream().filter(l -> l.startsWith("Uid:")).findFirst().orElseThrow();
        assertThat(List.of(uids.split("\\s+")).subList(1, 5)).as(uids).allMatch(u -> Long.parseLong(u) >= VmmJail.UID_BASE);
        assertThat(status).as("QEMU's capabilities and no_new_privs")
                .contains("CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1");
        assertThat(status.stream().filter(l -> l.startsWith("Groups:")).findFirst().orElseThrow().strip()).isEqualTo("Groups:");
        for (String ns : List.of("mnt", "pid", "net", "ipc", "uts")) {
            assertThat(Files.readSymbolicLink(proc.resolve("ns").resolve(ns)))
                    .as("QEMU's " + ns + " namespace").isNotEqualTo(Files.readSymbolicLink(Path.of("/proc/self/ns", ns)));
        }
        // Its root is its own: /usr, /dev, /proc, the guest's files, and none of the host's /etc, /root, /home or /tmp.
        try (var entries = Files.list(proc.resolve("root"))) {
            assertThat(entries.map(e -> e.getFileName().toString()).toList()).as("QEMU's root").contains("usr", "dev", "proc")
                    .doesNotContain("etc", "root", "home", "tmp", "boot");
        }
        try (var devices = Files.list(proc.resolve("root").resolve("dev"))) {
            assertThat(devices.map(e -> e.getFileName().toString()).toList()).containsExactlyInAnyOrder("null", "zero", "random", "urandom");
        }
        // A pid in the host's namespace and one in its own: one level below ours.
        String nsPids = status.stream().filter(l -> l.startsWith("NSpid:")).findFirst().orElseThrow();
        assertThat(nsPids.split("\\s+")).as(nsPids).hasSize(3);
        List<String> cgroups = Files.readAllLines(proc.resolve("cgroup"));
        assertThat(cgroups).as("QEMU's cgroups").anyMatch(l -> l.endsWith("/" + VmmJail.CGROUP_PARENT + "/" + sandboxId));
        Path v1 = Path.of("/sys/fs/cgroup");
        if (!Files.exists(v1.resolve("cgroup.controllers"))) {
            long memory = Qemu.guestMemoryBytes(SandboxSpec.defaults().limits()) + VmmJail.VMM_OVERHEAD_BYTES;
            Path parent = Path.of(VmmJail.CGROUP_PARENT, sandboxId);
            assertThat(Files.readString(v1.resolve("memory").resolve(parent).resolve("memory.limit_in_bytes")).strip())
                    .isEqualTo(Long.toString(memory));
            assertThat(Files.readString(v1.resolve("pids").resolve(parent).resolve("pids.max")).strip())
                    .isEqualTo(Integer.toString(VmmJail.VMM_PIDS));
            assertThat(Long.parseLong(Files.readString(v1.resolve("cpu").resolve(parent).resolve("cpu.cfs_quota_us")).strip())).isPositive();
            assertThat(Files.readAllLines(v1.resolve("memory").resolve(parent).resolve("cgroup.procs"))).contains(Long.toString(qemu.pid()));
        }
    }

    /** Inputs are checked as the OCI driver checks them (HostInputs), before anything boots; the contract's InputsIsolation shows the rest. */
    @Test
    void inputsTheOciDriverRefusesAreRefusedBeforeAnythingBoots() {
        SandboxSpec withInputs = SandboxSpec.defaults().withInputs(List.of(new Input("state", MicroVmDriverConfig.defaults().stateRoot())));
        assertThatThrownBy(() -> driver.check(withInputs, List.of()))
                .isInstanceOf(AirlockException.class).hasMessageContaining("which is never shown to a sandbox");
    }

    /** A QEMU of an instance that is gone (no lock holder: its engine died) is killed, and the instance's directory removed. */
    @Test
    void theQemuAndStateOfADeadInstanceAreReaped() throws Exception {
        Path dead = MicroVmDriverConfig.defaults().stateRoot().resolve("engines").resolve("deadbeef");
        Path guest = dead.resolve("sandboxes").resolve("al-deadbeef-0000000000000000");
        Files.createDirectories(guest);
        // A QEMU that boots nothing (no machine, stopped), named by its guest directory as the driver's are.
        Process orphan = new ProcessBuilder(Qemu.find().toString(), "-nodefaults", "-no-user-config", "-display", "none", "-M", "none",
                "-S", "-chardev", "socket,id=agent,server=on,wait=off,path=" + guest.resolve(MicroVmDriver.SOCKET_NAME))
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            long deadline = System.currentTimeMillis() + 10_000;
            while (qemuProcessesOf(guest + "/").isEmpty() && System.currentTimeMillis() < deadline) {
                Thread.sleep(20);
            }
            assertThat(orphan.isAlive()).isTrue();

            List<String> reaped = driver.reapOrphans();

            assertThat(reaped).contains("QEMU process " + orphan.pid() + " of instance deadbeef", "state of instance deadbeef");
            assertThat(orphan.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            assertThat(dead).doesNotExist();
            assertThat(driver.isAlive("deadbeef")).isFalse();
            assertThat(driver.isAlive(driver.instance())).isTrue();
        } finally {
            orphan.destroyForcibly();
        }
    }

    @Test
    void theDriverIsFoundByItsNameAndByItsTier() {
        try (IsolationDriver found = DriverProvider.open(DriverSettings.of(MicroVmDriverProvider.NAME))) {
            assertThat(found).isInstanceOf(MicroVmDriver.class);
            assertThat(found.isolation().id()).isEqualTo("microvm");
        }
        try (IsolationDriver found = DriverProvider.openTier(Isolation.MICROVM, DriverSettings.of("oci"))) {
            assertThat(found).isInstanceOf(MicroVmDriver.class);
        }
    }

    private static ExecResult exec(Sandbox sandbox, String... argv) {
        return sandbox.exec(ExecRequest.of(argv).withTimeout(Duration.ofSeconds(60)));
    }

    /** A process's CPU time (user and system), from /proc/PID/stat. */
    private static long cpuMillis(ProcessHandle p) throws Exception {
        String stat = Files.readString(Path.of("/proc", Long.toString(p.pid()), "stat"));
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
        return ticks * 1000 / 100;      // USER_HZ is 100 on Linux
    }

    /** QEMU processes whose command line names {@code pathPart}. */
    private static List<ProcessHandle> qemuProcessesOf(String pathPart) {
        return ProcessHandle.allProcesses()
                .filter(p -> p.info().command().map(c -> c.endsWith("/" + Qemu.BINARY)).orElse(false))
                .filter(p -> p.info().arguments().map(args -> String.join(" ", args).contains(pathPart)).orElse(false))
                .toList();
    }
}
