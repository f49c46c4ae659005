package dev.airlock.core.contract;

import dev.airlock.core.EndReason;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static dev.airlock.core.contract.Hostile.py;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Bombs against every budget of {@link Limits}: each is stopped by its limit with the precise
 * error or end reason, and the run ends.
 */
public abstract class ResourceLimitsContract extends ContractTestBase {

    private static final long MIB = 1024 * 1024;

    protected ResourceLimitsContract(DriverContract driver) {
        super(driver);
    }

    /**
     * The pids limit counts the agent, the execution's supervisor and the program: with 16, the
     * program gets 13 children, then EAGAIN.
     * Under gVisor the whole sandbox ends instead, cancelled: see {@link #forkBombUnderGvisor}.
     */
    @Test
    @Tag("smoke")
    void forkBombIsStoppedByPidsLimit() {
        ExecResult r = forkBombUnderGvisor(run(Language.PYTHON, """
                import os, sys, time
                n = 0
                try:
                    while True:
                        if os.fork() == 0:
                            time.sleep(30)
                            os._exit(0)
                        n += 1
                except OSError as e:
                    print(n, type(e).__name__, e.errno, e.strerror, flush=True)
                """, Limits.DEFAULTS.withPids(16)));
        if (r == null) {
            return;
        }
        assertThat(r.stdoutText()).isEqualTo("13 BlockingIOError 11 Resource temporarily unavailable\n");
    }

    /** Threads count against the same limit (the agent, the supervisor and the main thread take 3 of 16). */
    @Test
    void threadBombIsStoppedByPidsLimit() {
        ExecResult r = ok(run(Language.PYTHON, """
                import os, threading, time
                threads = []
                try:
                    while True:
                        t = threading.Thread(target=time.sleep, args=(30,), daemon=True)
                        t.start()
                        threads.append(t)
                except RuntimeError as e:
                    print(len(threads), e, flush=True)
                os._exit(0)
                """, Limits.DEFAULTS.withPids(16)));
        assertThat(r.stdoutText()).isEqualTo("13 can't start new thread\n");
    }

    /** A real bomb (every child forks too) never holds more processes than the limit allows (under gVisor: {@link #forkBombUnderGvisor}). */
    @Test
    void exponentialForkBombStaysUnderPidsLimit() {
        ExecResult r = forkBombUnderGvisor(run(Language.PYTHON, """
                import os, time
                start = os.getpid()
                failures = 0
                for _ in range(12):
                    try:
                        os.fork()
                    except OSError as e:
                        failures += 1
                        assert e.errno == 11, e
                if os.getpid() != start:
                    time.sleep(30)
                    os._exit(0)
                # The children may not have forked yet: keep forking until the limit refuses one.
                for _ in range(100):
                    if failures:
                        break
                    try:
                        if os.fork() == 0:
                            time.sleep(30)
                            os._exit(0)
                    except OSError as e:
                        failures += 1
                        assert e.errno == 11, e
                time.sleep(0.5)
                pids = [p for p in os.listdir("/proc") if p.isdigit()]
                print("processes", len(pids), "refused forks in main", failures, flush=True)
                """, Limits.DEFAULTS.withPids(24)));
        if (r == null) {
            return;
        }
        String[] words = r.stdoutText().trim().split(" ");
        assertThat(words[0]).isEqualTo("processes");
        // The driver's spare supervisors come on top of the limit the code was given.
        assertThat(Integer.parseInt(words[1])).as("processes in the sandbox, agent, spares and supervisor included")
                .isBetween(3, 24 + driver.spareSupervisors());
        assertThat(Integer.parseInt(words[6])).as("forks refused to the main process").isPositive();
    }

    /**
     * A fork bomb's outcome: under the host's kernel the run must have exited (returned, for the
     * caller's own assertions). Under gVisor the host pids cgroup holds the Sentry's and gofer's host
     * threads (the limit plus 128), and every sandbox process costs the Sentry several host threads
     * (about 8 on the ptrace platform here): the cgroup is reached before the Sentry's RLIMIT_NPROC
     * (set to the limit, which does stop a thread bomb), the Sentry cannot go on and the whole
     * sandbox ends with its agent: agent_killed, not a client's cancel (null returned). The host's
     * process table is protected either way.
     */
    private ExecResult forkBombUnderGvisor(ExecResult r) {
        if (gvisor()) {
            assertThat(r.endReason()).as(r.toString()).isEqualTo(EndReason.AGENT_KILLED);
            return null;
        }
        return ok(r);
    }

    /**
     * Out of memory is reported as such on every tier. Under gVisor the memory cgroup holds the
     * Sentry and its gofer, not the code's processes: going over the limit kills the Sentry, so the
     * whole sandbox ends with the execution, and the message says so.
     */
    @Test
    @Tag("smoke")
    void memoryBombIsOomKilled() {
        ExecResult r = run(Language.PYTHON, """
                print("allocating", flush=True)
                hog = []
                while True:
                    hog.append(bytearray(1 << 20))
                """, Limits.DEFAULTS.withMemoryBytes(64 * MIB));
        assertThat(r.endReason()).as(r.toString()).isEqualTo(EndReason.OOM_KILLED);
        assertThat(r.exitCode()).isEqualTo(137);
        assertThat(r.message()).isEqualTo("killed by the kernel: the sandbox reached its memory limit of 64m"
                + (gvisor() ? ", and the whole sandbox ended with it" : ""));
        assertThat(r.stdoutText()).isEqualTo("allocating\n");
    }

    /**
     * tmpfs pages are charged to the sandbox: a disk larger than memory is no way around the memory
     * limit. Under gVisor the tmpfs is the Sentry's memory: the whole sandbox ends, out of memory, as in {@link #memoryBombIsOomKilled}.
     */
    @Test
    void tmpfsCannotBeUsedToExceedTheMemoryLimit() {
        ExecResult r = run(Language.PYTHON, """
                with open("/dev/shm/hog", "wb", buffering=0) as f:
                    while True:
                        f.write(b"x" * (1 << 20))
                """, Limits.DEFAULTS.withMemoryBytes(32 * MIB).withDiskBytes(256 * MIB));
        assertThat(r.endReason()).as(r.toString()).isEqualTo(EndReason.OOM_KILLED);
        assertThat(r.exitCode()).isEqualTo(137);
    }

    @Test
    void fillingTheWritableMountsStopsWithNoSpaceLeftOnDevice() {
        ExecResult r = ok(run(Language.PYTHON, """
                import os
                for d in ["/tmp", "/workspace", "/dev/shm"]:
                    n = 0
                    try:
                        with open(d + "/fill", "wb", buffering=0) as f:
                            while True:
                                n += f.write(b"x" * 65536)
                    except OSError as e:
                        print(d, n, e.errno, e.strerror, flush=True)
                    os.unlink(d + "/fill")
                """, Limits.DEFAULTS.withDiskBytes(4 * MIB)));
        String[] lines = r.stdoutText().split("\n");
        assertThat(lines).hasSize(3);
        for (String line : lines) {
            String[] w = line.split(" ", 4);
            assertThat(w[2] + " " + w[3]).as(line).isEqualTo("28 No space left on device");
            assertThat(Long.parseLong(w[1])).as(line).isBetween(3 * MIB, 4 * MIB);
        }
        assertThat(lines[1]).as("/workspace holds exactly its 4m").isEqualTo("/workspace 4194304 28 No space left on device");
    }

    /** Past RLIMIT_FSIZE the kernel sends SIGXFSZ, whose default action kills the writer. */
    @Test
    void writingPastFileSizeLimitIsKilledBySigxfsz() {
        ExecResult r = run(Language.PYTHON, """
                import signal
                signal.signal(signal.SIGXFSZ, signal.SIG_DFL)   # Python ignores it by default
                print("writing", flush=True)
                with open("/tmp/big", "wb") as f:
                    f.write(b"x" * (2 << 20))
                print("not reached", flush=True)
                """, Limits.DEFAULTS.withFileSizeBytes(MIB));
        assertThat(r.endReason()).as(r.stderrText()).isEqualTo(EndReason.SIGNALED);
        assertThat(r.exitCode()).isEqualTo(128 + 25);
        assertThat(r.message()).isEqualTo("killed by signal 25");
        assertThat(r.stdoutText()).isEqualTo("writing\n");
    }

    @Test
    void shellRedirectPastFileSizeLimitIsKilledBySigxfsz() {
        // coreutils' stat asks statx with AT_NO_AUTOMOUNT, which gVisor's Sentry refuses (EINVAL): wc measures there.
        ExecResult r = ok(run(Language.SH, """
                head -c 2000000 /dev/zero > /tmp/big
                echo "status $?"
                %s
                """.formatted(gvisor() ? "wc -c < /tmp/big" : "stat -c %s /tmp/big"), Limits.DEFAULTS.withFileSizeBytes(MIB)));
        assertThat(r.stdoutText()).isEqualTo("status 153\n1048576\n");
    }

    /** With SIGXFSZ ignored the write fails with EFBIG and the file stops at exactly the limit. */
    @Test
    void writingPastFileSizeLimitWithSigxfszIgnoredFailsWithEfbig() {
        ExecResult r = ok(run(Language.PYTHON, """
                import os
                n = 0
                try:
                    with open("/workspace/big", "wb", buffering=0) as f:
                        while True:
                            n += f.write(b"x" * 4096)
                except OSError as e:
                    print(n, e.errno, e.strerror)
                print(os.path.getsize("/workspace/big"))
                """, Limits.DEFAULTS.withFileSizeBytes(MIB)));
        assertThat(r.stdoutText()).isEqualTo("1048576 27 File too large\n1048576\n");
    }

    /** The hard limits are set: the program cannot raise them back. */
    @Test
    void fileSizeAndOpenFilesLimitsCannotBeRaised() {
        ExecResult r = ok(run(Language.PYTHON, py("""
                import resource
                class rlimit(ctypes.Structure):
                    _fields_ = [("cur", ctypes.c_ulong), ("max", ctypes.c_ulong)]
                def setrlimit(res, value):
                    if libc.prlimit(0, res, ctypes.byref(rlimit(value, value)), None) != 0:
                        e = ctypes.get_errno()
                        raise OSError(e, os.strerror(e))
                print(resource.getrlimit(resource.RLIMIT_FSIZE), resource.getrlimit(resource.RLIMIT_NOFILE), resource.getrlimit(resource.RLIMIT_CORE))
                attempt("raise fsize", lambda: setrlimit(resource.RLIMIT_FSIZE, 2 << 20))
                attempt("raise fsize to infinity", lambda: setrlimit(resource.RLIMIT_FSIZE, 2**64 - 1))
                attempt("raise nofile", lambda: setrlimit(resource.RLIMIT_NOFILE, 4096))
                attempt("raise core", lambda: setrlimit(resource.RLIMIT_CORE, 1 << 30))
                """), Limits.DEFAULTS.withFileSizeBytes(MIB).withOpenFiles(64)));
        assertThat(r.stdoutText()).isEqualTo("""
                (1048576, 1048576) (64, 64) (0, 0)
                raise fsize: EPERM Operation not permitted
                raise fsize to infinity: EPERM Operation not permitted
                raise nofile: EPERM Operation not permitted
                raise core: EPERM Operation not permitted
                """);
    }

    /** The open-files limit: the last descriptor handed out is limit - 1, then EMFILE. */
    @Test
    void openFilesLimitGivesEmfile() {
        ExecResult r = ok(run(Language.PYTHON, """
                import os
                fds = []
                try:
                    while True:
                        fds.append(os.open("/dev/null", os.O_RDONLY))
                except OSError as e:
                    print(max(fds), e.errno, e.strerror)
                """, Limits.DEFAULTS.withOpenFiles(32)));
        assertThat(r.stdoutText()).isEqualTo("31 24 Too many open files\n");
    }

    @Test
    void cpuSpinPastTimeoutIsTimedOutAndKeepsOutputProducedBefore() {
        ExecResult r = run(Language.PYTHON, """
                print("spinning", flush=True)
                import sys
                sys.stderr.write("on stderr too\\n"); sys.stderr.flush()
                while True:
                    pass
                """, Limits.DEFAULTS.withTimeout(scaled(Duration.ofSeconds(2))));
        assertThat(r.endReason()).isEqualTo(EndReason.TIMED_OUT);
        assertThat(r.timedOut()).isTrue();
        assertThat(r.exitCode()).as("killed by SIGKILL").isEqualTo(137);
        assertThat(r.message()).isEqualTo("timed out after " + scaled(Duration.ofSeconds(2)).toSeconds() + "s and was killed");
        assertThat(r.stdoutText()).isEqualTo("spinning\n");
        assertThat(r.stderrText()).isEqualTo("on stderr too\n");
    }

    /**
     * A timed-out program that ignores SIGTERM and sits in its own process group is still killed. The
     * timeout is scaled ({@link #scaled}): the program must have armoured itself before the kill.
     */
    @Test
    void timeoutCannotBeDodgedByIgnoringSignals() {
        ExecResult r = run(Language.PYTHON, """
                import os, signal, time
                for s in [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT]:
                    signal.signal(s, signal.SIG_IGN)
                print("armoured", flush=True)
                while True:
                    time.sleep(1)
                """, Limits.DEFAULTS.withTimeout(scaled(Duration.ofSeconds(1))));
        assertThat(r.endReason()).isEqualTo(EndReason.TIMED_OUT);
        assertThat(r.exitCode()).isEqualTo(137);
        assertThat(r.stdoutText()).isEqualTo("armoured\n");
    }

    @Test
    void outputPastTheLimitIsTruncatedToExactlyTheLimit() {
        ExecResult r = ok(run(Language.PYTHON, """
                import sys
                sys.stdout.write("a" * 10000)
                sys.stderr.write("b" * 5000)
                """, Limits.DEFAULTS.withOutputBytes(1000)));
        assertThat(r.truncated()).isTrue();
        assertThat(r.stdout()).hasSize(1000);
        assertThat(r.stderr()).hasSize(1000);
        assertThat(r.stdoutText()).isEqualTo("a".repeat(1000));
        assertThat(r.stderrText()).isEqualTo("b".repeat(1000));
    }

    /**
     * 200 MB of stdout with the default 1 MiB limit: the run ends on its own, the output is cut.
     * Under gVisor 20 MB: a pipe through the Sentry moves about 10 MB/s on a loaded two-core host,
     * so 200 MB would outlast the default 30 s timeout; 20 times the limit proves the same.
     */
    @Test
    void hugeStdoutFloodDoesNotHang() {
        long flood = gvisor() ? 20_000_000 : 200_000_000;
        ExecResult r = ok(run(Language.SH, "head -c " + flood + " /dev/zero; echo done >&2", Limits.DEFAULTS));
        assertThat(r.truncated()).isTrue();
        assertThat(r.stdout()).hasSize((int) Limits.DEFAULTS.outputBytes());
        assertThat(r.stderrText()).isEqualTo("done\n");
    }

    /** An endless flood ends at the timeout with the limit's worth of output kept. */
    @Test
    void endlessStdoutFloodEndsAtTheTimeout() {
        ExecResult r = run(Language.SH, "cat /dev/zero", Limits.DEFAULTS.withTimeout(Duration.ofSeconds(2)));
        assertThat(r.endReason()).isEqualTo(EndReason.TIMED_OUT);
        assertThat(r.truncated()).isTrue();
        assertThat(r.stdout()).hasSize((int) Limits.DEFAULTS.outputBytes());
    }

}
