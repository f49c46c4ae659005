package dev.airlock.core.contract;

import dev.airlock.core.ExecResult;
import dev.airlock.core.KernelFiles;
import dev.airlock.core.Limits;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static dev.airlock.core.contract.Hostile.py;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a sandbox can learn about its host through /proc: nothing that identifies the host (its
 * boot, its kernel command line, its key owners), nothing of its hardware or of what the other
 * tenants do, and no host path in the mount table. Each test reads the host's own value first, so
 * it is the sandbox's view, not an empty host, that hides it.
 */
public abstract class HostInformationContract extends ContractTestBase {

    private static final long MIB = 1024 * 1024;

    protected HostInformationContract(DriverContract driver) {
        super(driver);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"/proc/cmdline", "/proc/sys/kernel/random/boot_id", "/proc/key-users"})
    void hostIdentityInProcReadsEmptyInTheSandbox(String path) throws IOException {
        String host = KernelFiles.read(Path.of(path));
        assertThat(host).as("the host's own %s", path).isNotEmpty();

        ExecResult r = ok(python(py("""
                def read():
                    with open("%s", "rb") as f:
                        print("read", len(f.read(65536)), "bytes", flush=True)
                attempt("%s", read)
                """.formatted(path, path))));

        if (gvisor()) {
            // The Sentry's /proc is its own: it has no boot_id and no key-users at all, and its cmdline
            // is gVisor's fixed text, not the host's.
            if (path.equals("/proc/cmdline")) {
                String inside = ok(python("print(open('/proc/cmdline').read(), end='')")).stdoutText();
                assertThat(inside).contains("gvisor").isNotEqualTo(host).doesNotContain(host.strip());
            } else {
                assertThat(r.stdoutText()).isEqualTo(path + ": ENOENT No such file or directory\n");
            }
            return;
        }
        if (guest()) {
            assertGuestsOwnIdentity(path, host);
            return;
        }
        assertThat(r.stdoutText()).isEqualTo("read 0 bytes\n" + path + ": ok\n");
    }

    /**
     * In a guest, /proc is the guest kernel's: its command line is the one the driver booted it with,
     * its boot id is the guest's boot's, its key owners are the guest's own users (its root and the
     * sandbox user). None of it is the host's, and none of it names the host.
     */
    private void assertGuestsOwnIdentity(String path, String host) {
        String inside = ok(python("print(open('%s').read(), end='')".formatted(path))).stdoutText();
        assertThat(inside).as("the guest's own %s", path).isNotEmpty().isNotEqualTo(host).doesNotContain(host.strip());
        switch (path) {
            case "/proc/cmdline" -> assertThat(inside).as("the guest kernel's command line, which the driver wrote").contains("airlock.memory=");
            case "/proc/sys/kernel/random/boot_id" -> assertThat(inside.strip()).as("the guest's boot id").matches("[0-9a-f-]{36}");
            default -> assertThat(inside.lines().map(l -> l.strip().split(":")[0]).toList())
                    .as("the owners of keys in the guest: its root and the sandbox user, no host account").isSubsetOf("0", "1000");
        }
    }

    /**
     * An attacker reads every file of /proc it can (but the processes' own directories) and looks
     * for the host's boot id and kernel command line: neither is anywhere.
     */
    @Test
    void noFileOfProcCarriesTheHostsBootIdOrCommandLine() throws IOException {
        String bootId = KernelFiles.read(Path.of("/proc/sys/kernel/random/boot_id"));
        String cmdline = KernelFiles.read(Path.of("/proc/cmdline"));
        assertThat(bootId).matches("[0-9a-f-]{36}");
        assertThat(cmdline.length()).as("a host command line long enough to be unique").isGreaterThan(10);

        ExecResult r = ok(python("""
                import os
                needles = {"boot_id": %s.encode(), "cmdline": %s.encode()}
                found, files = [], 0
                for top, dirs, names in os.walk("/proc"):
                    if top == "/proc":
                        dirs[:] = [d for d in dirs if not d.isdigit() and d not in ("self", "thread-self")]
                    for name in names:
                        path = os.path.join(top, name)
                        try:
                            with open(path, "rb") as f:
                                data = f.read(1 << 20)
                        except OSError:
                            continue
                        files += 1
                        found += [f"{what} in {path}" for what, needle in needles.items() if needle in data]
                print("read", files > %d, "found", found)
                """.formatted(pyString(bootId), pyString(cmdline), procFilesAtLeast())));

        assertThat(r.stdoutText()).isEqualTo("read True found []\n");
    }

    /**
     * How many files the walk of /proc must at least read for its finding nothing to mean something:
     * the host's /proc has hundreds; the Sentry's own /proc (gVisor) has about 66, with no per-device
     * or per-driver files at all.
     */
    private int procFilesAtLeast() {
        return gvisor() ? 50 : 100;
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"/proc/partitions", "/proc/interrupts", "/proc/ioports", "/proc/vmstat", "/proc/zoneinfo",
            "/proc/buddyinfo", "/proc/softirqs", "/proc/devices", "/proc/consoles"})
    void hostHardwareAndActivityReadEmpty(String path) throws IOException {
        if (Files.exists(Path.of(path))) {
            assertThat(KernelFiles.read(Path.of(path))).as("the host's own %s", path).isNotEmpty();
        }
        ExecResult r = ok(python(py("""
                def read():
                    with open("%s", "rb") as f:
                        print("read", len(f.read(65536)), "bytes", flush=True)
                attempt("%s", read)
                """.formatted(path, path))));
        if (guest()) {
            assertGuestsOwnHardware(path, r);
            return;
        }
        // The Sentry's /proc (gVisor) has none of these files: it describes no host hardware at all.
        assertThat(r.stdoutText()).isEqualTo(Files.exists(Path.of(path)) && !gvisor()
                ? "read 0 bytes\n" + path + ": ok\n"
                : path + ": ENOENT No such file or directory\n");
    }

    /**
     * In a guest, these files describe the guest's own virtual hardware and activity, as its kernel
     * sees them: readable, but not the host's (the guest has no disk, one vCPU by default, and
     * devices and interrupts of the VMM's making).
     */
    private void assertGuestsOwnHardware(String path, ExecResult r) throws IOException {
        if (r.stdoutText().equals(path + ": ENOENT No such file or directory\n")) {
            return; // the guest kernel's build has no such file: nothing of the host either
        }
        assertThat(r.stdoutText()).endsWith(path + ": ok\n");
        String inside = ok(python("print(open('%s').read(), end='')".formatted(path))).stdoutText();
        if (Files.exists(Path.of(path))) {
            assertThat(inside).as("the guest's own %s", path).isNotEqualTo(KernelFiles.read(Path.of(path)));
        }
        switch (path) {
            case "/proc/partitions" -> assertThat(inside.lines().skip(1).filter(l -> !l.isBlank()).toList())
                    .as("the partitions of the guest, which has no disk").isEmpty();
            case "/proc/interrupts", "/proc/softirqs" -> assertThat(inside.lines().findFirst().orElse("").strip())
                    .as("the per-CPU columns: the guest's one vCPU, not the host's CPUs").isEqualTo("CPU0");
            default -> { }
        }
    }

    /** meminfo, cpuinfo and stat describe the sandbox's limits; diskstats, swaps and loadavg no host device or load. */
    @Test
    @Tag("smoke")
    void memoryCpusDisksAndLoadShownAreTheSandboxsNotTheHosts() throws IOException {
        String hostMemTotal = Files.readAllLines(Path.of("/proc/meminfo")).getFirst();
        assertThat(hostMemTotal).doesNotContain(" " + (200 * 1024) + " kB");
        assertThat(KernelFiles.read(Path.of("/proc/diskstats"))).as("the host's disks").isNotEmpty();
        Limits limits = Limits.DEFAULTS.withMemoryBytes(200 * MIB).withCpus(1);

        try (Sandbox sb = engine.create(spec().withLimits(limits))) {
            if (gvisor()) {
                assertSentrysViewOfMemoryCpusDisksAndLoad(sb);
                return;
            }
            if (guest()) {
                assertGuestsViewOfMemoryCpusDisksAndLoad(sb, limits);
                return;
            }
            ExecResult r = ok(python(sb, """
                    import os
                    print(open("/proc/meminfo").read().splitlines()[0].split())
                    print("processors", sum(l.startswith("processor") for l in open("/proc/cpuinfo")))
                    print("cpu lines", [l.split()[0] for l in open("/proc/stat") if l.startswith("cpu")])
                    print("cpu_count", os.cpu_count())
                    print("diskstats", repr(open("/proc/diskstats").read()))
                    print("swaps", len(open("/proc/swaps").read().splitlines()))
                    print("loadavg", open("/proc/loadavg").read().split()[:3])
                    """));

            assertThat(r.stdoutText()).isEqualTo("""
                    ['MemTotal:', '204800', 'kB']
                    processors 1
                    cpu lines ['cpu', 'cpu0']
                    cpu_count 1
                    diskstats ''
                    swaps 1
                    loadavg ['0.00', '0.00', '0.00']
                    """);
        }
    }

    /**
     * Under gVisor the Sentry's /proc shows the sandbox's memory limit, and no disk, swap or load of
     * the host (it has no diskstats and no swaps at all); but its CPUs are those the Sentry may run
     * on, the host's, whatever the sandbox's cpus limit: the one host figure it shows (a gap of the
     * gVisor tier; the limit itself holds, through the host cgroup).
     */
    private void assertSentrysViewOfMemoryCpusDisksAndLoad(Sandbox sb) throws IOException {
        int hostCpus = hostCpuCount();
        ExecResult r = ok(python(sb, py("""
                print(open("/proc/meminfo").read().splitlines()[0].split())
                print("processors", sum(l.startswith("processor") for l in open("/proc/cpuinfo")))
                print("cpu_count", os.cpu_count())
                attempt("diskstats", lambda: open("/proc/diskstats").read())
                attempt("swaps", lambda: open("/proc/swaps").read())
                print("loadavg", open("/proc/loadavg").read().split()[:3])
                """)));
        assertThat(r.stdoutText()).isEqualTo("""
                ['MemTotal:', '204800', 'kB']
                processors %d
                cpu_count %d
                diskstats: ENOENT No such file or directory
                swaps: ENOENT No such file or directory
                loadavg ['0.00', '0.00', '0.00']
                """.formatted(hostCpus, hostCpus));
    }

    /**
     * In a guest, meminfo shows the guest's RAM: the sandbox's memory limit and the guest kernel's own
     * share (the driver gives the guest at most 128 MiB beyond the limit; the sandbox's processes are
     * held to the limit by the guest's cgroup), nowhere near the host's. Its CPUs, disks, swap and
     * load are the guest's: the sandbox's one vCPU, no disk, no swap, no load but its own.
     */
    private void assertGuestsViewOfMemoryCpusDisksAndLoad(Sandbox sb, Limits limits) {
        ExecResult r = ok(python(sb, """
                import os
                print(int(open("/proc/meminfo").read().splitlines()[0].split()[1]) * 1024)
                print("processors", sum(l.startswith("processor") for l in open("/proc/cpuinfo")))
                print("cpu lines", [l.split()[0] for l in open("/proc/stat") if l.startswith("cpu")])
                print("cpu_count", os.cpu_count())
                print("diskstats", repr(open("/proc/diskstats").read()))
                print("swaps", len(open("/proc/swaps").read().splitlines()))
                """));
        List<String> lines = r.stdoutText().lines().toList();
        assertThat(Long.parseLong(lines.getFirst())).as("the guest's MemTotal in bytes")
                .isBetween(limits.memoryBytes() - 16 * MIB, limits.memoryBytes() + GUEST_OVERHEAD_BYTES);
        assertThat(lines.subList(1, lines.size())).containsExactly(
                "processors 1", "cpu lines ['cpu', 'cpu0']", "cpu_count 1", "diskstats ''", "swaps 1");
    }

    /** The most memory a guest may have beyond the sandbox's limit, for its own kernel. */
    private static final long GUEST_OVERHEAD_BYTES = 128 * MIB;

    /** The host's processors, as its /proc/cpuinfo lists them. */
    private static int hostCpuCount() throws IOException {
        return (int) Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("processor")).count();
    }

    /** What the views and masks change, programs that read /proc and the mount table still cope with. */
    @Test
    void toolsThatReadProcAndTheMountTableStillWork() throws IOException {
        try (Sandbox sb = engine.create(spec())) {
            ExecResult df = ok(exec(sb, "df", "-P", "/", "/workspace"));
            assertThat(df.stdoutText().lines().count()).isEqualTo(3);
            ExecResult ps = ok(exec(sb, "ps", "-eo", "pid,comm"));
            assertThat(ps.stdoutText()).contains("ps");
            ExecResult free = ok(exec(sb, "free", "-m"));
            if (guest()) {
                // the guest's RAM: the sandbox's 512 MiB and its kernel's share (see above)
                assertThat(free.stdoutText()).containsPattern("Mem:\\s+(5[0-9][0-9]|6[0-3][0-9]|640)\\s");
            } else {
                assertThat(free.stdoutText()).containsPattern("Mem:\\s+512\\s");
            }
            ExecResult py = ok(python(sb, """
                    import os, shutil
                    print(shutil.disk_usage("/workspace").total > 0, os.cpu_count(), len(open("/proc/self/mounts").read()) > 0)
                    """));
            // The CPU count is the sandbox's one under the host's kernel (ProcViews), the host's under gVisor (see above).
            assertThat(py.stdoutText()).isEqualTo("True " + (gvisor() ? hostCpuCount() : 1) + " True\n");
        }
    }

    private static String pyString(String s) {
        return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
    }
}
