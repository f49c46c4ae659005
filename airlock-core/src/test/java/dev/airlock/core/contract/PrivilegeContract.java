package dev.airlock.core.contract;

import dev.airlock.core.ExecResult;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static dev.airlock.core.contract.Hostile.py;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The sandbox user has no privilege and cannot get any: no capability in any set, no_new_privs,
 * a seccomp filter, uid 1000 (an unprivileged host uid), setuid programs that do not raise it,
 * id maps that cannot be rewritten, and an agent whose memory, environment and descriptors it
 * cannot reach although it shares the agent's uid.
 */
public abstract class PrivilegeContract extends ContractTestBase {

    protected PrivilegeContract(DriverContract driver) {
        super(driver);
    }

    @Test
    @Tag("smoke")
    void processHasNoCapabilitiesNoNewPrivsAndASeccompFilter() {
        ExecResult r = ok(sh("grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status"));
        if (gvisor()) {
            // The Sentry's status file has no CapAmb and no NoNewPrivs line; prctl shows no_new_privs
            // set and no ambient capability can be raised (capabilitiesCannotBeRaised).
            assertThat(r.stdoutText()).isEqualTo("""
                    CapInh:\t0000000000000000
                    CapPrm:\t0000000000000000
                    CapEff:\t0000000000000000
                    CapBnd:\t0000000000000000
                    Seccomp:\t2
                    """);
            return;
        }
        assertThat(r.stdoutText()).isEqualTo("""
                CapInh:\t0000000000000000
                CapPrm:\t0000000000000000
                CapEff:\t0000000000000000
                CapBnd:\t0000000000000000
                CapAmb:\t0000000000000000
                NoNewPrivs:\t1
                Seccomp:\t2
                """);
    }

    @Test
    void becomingRootFailsWithEperm() {
        ExecResult r = ok(python(py("""
                attempt("setuid(0)", lambda: os.setuid(0))
                attempt("seteuid(0)", lambda: os.seteuid(0))
                attempt("setresuid(0,0,0)", lambda: os.setresuid(0, 0, 0))
                attempt("setreuid(0,0)", lambda: os.setreuid(0, 0))
                attempt("setgid(0)", lambda: os.setgid(0))
                attempt("setresgid(0,0,0)", lambda: os.setresgid(0, 0, 0))
                attempt("setgroups([0])", lambda: os.setgroups([0]))
                attempt("setuid(65534)", lambda: os.setuid(65534))
                print(os.getresuid(), os.getresgid())
                """)));
        assertThat(r.stdoutText()).isEqualTo("""
                setuid(0): EPERM Operation not permitted
                seteuid(0): EPERM Operation not permitted
                setresuid(0,0,0): EPERM Operation not permitted
                setreuid(0,0): EPERM Operation not permitted
                setgid(0): EPERM Operation not permitted
                setresgid(0,0,0): EPERM Operation not permitted
                setgroups([0]): EPERM Operation not permitted
                setuid(65534): EPERM Operation not permitted
                (1000, 1000, 1000) (1000, 1000, 1000)
                """);
    }

    @Test
    void capabilitiesCannotBeRaised() {
        ExecResult r = ok(python(py("""
                # capset(version 3, pid 0) with every bit of the first word in effective, permitted, inheritable
                hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
                data = (ctypes.c_uint32 * 6)(0xffffffff, 0xffffffff, 0xffffffff, 0, 0, 0)
                print("capset", sc(126, ctypes.addressof(hdr), ctypes.addressof(data)))
                PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS = 47, 2, 28, 38, 39
                print("ambient raise CAP_SYS_ADMIN", sc(157, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, 21, 0, 0))
                print("securebits", sc(157, PR_SET_SECUREBITS, 0x2f, 0, 0, 0))
                print("clear no_new_privs", sc(157, PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0), "now", sc(157, PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0))
                """)));
        // gVisor's prctl checks its arguments before the caller's privilege: raising an ambient
        // capability outside the permitted set and setting securebits give EINVAL, not EPERM.
        String refused = gvisor() ? "errno=22" : "errno=1";
        assertThat(r.stdoutText()).isEqualTo("""
                capset result=-1 errno=1
                ambient raise CAP_SYS_ADMIN result=-1 %s
                securebits result=-1 %s
                clear no_new_privs result=-1 errno=22 now result=1 errno=0
                """.formatted(refused, refused));
    }

    @Test
    void idMapsCannotBeRewritten() {
        ExecResult r = ok(python(py("""
                attempt("uid_map", lambda: write_to("/proc/self/uid_map"))
                attempt("gid_map", lambda: write_to("/proc/self/gid_map"))
                attempt("setgroups", lambda: write_to("/proc/self/setgroups"))
                attempt("agent's uid_map", lambda: write_to("/proc/1/uid_map"))
                """)));
        // gVisor parses what is written to a map before asking whether it may be written: the probe's
        // "x" is refused as EINVAL there; the maps stay as they are either way.
        String map = gvisor() ? "EINVAL Invalid argument" : "EPERM Operation not permitted";
        assertThat(r.stdoutText()).isEqualTo("""
                uid_map: %s
                gid_map: %s
                setgroups: EACCES Permission denied
                agent's uid_map: EACCES Permission denied
                """.formatted(map, map));
    }

    @Test
    void suDoesNotGiveRoot() {
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/su")), "the host has no su");
        ExecResult r = ok(sh("""
                su -c 'id -u' </dev/null; echo "su: $?"
                su root -c 'id -u' </dev/null; echo "su root: $?"
                su sandbox -c 'id -u' </dev/null; echo "su sandbox: $?"
                """));
        assertThat(r.stdoutText()).isEqualTo("su: 1\nsu root: 1\nsu sandbox: 1\n");
    }

    /**
     * Every setuid/setgid program of the image runs with the caller's ids: its credentials, read
     * from /proc while it runs (or as a zombie), never show uid 0 (the host's root is not mapped,
     * the mounts are nosuid, and no_new_privs is set).
     */
    @Test
    void setuidProgramsRunWithoutRaisedIds() throws Exception {
        ExecResult r = ok(python("""
                import glob, os, stat, subprocess, time
                progs = sorted(p for p in glob.glob("/usr/bin/*") + glob.glob("/usr/sbin/*")
                               if os.path.isfile(p) and os.stat(p).st_mode & (stat.S_ISUID | stat.S_ISGID))
                print("setuid programs", len(progs))
                raised = []
                for prog in progs:
                    p = subprocess.Popen([prog], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    seen = set()
                    for _ in range(20):
                        try:
                            st = open(f"/proc/{p.pid}/status").read().splitlines()
                        except OSError:
                            break
                        seen |= {l for l in st if l.startswith(("Uid:", "Gid:"))}
                        if p.poll() is not None:
                            break
                        time.sleep(0.01)
                    p.kill(); p.wait()
                    if not seen or seen != {"Uid:\\t1000\\t1000\\t1000\\t1000", "Gid:\\t1000\\t1000\\t1000\\t1000"}:
                        raised.append((prog, sorted(seen)))
                print("raised", raised)
                """));
        long onHost;
        try (var files = Files.list(Path.of("/usr/bin"))) {
            onHost = files.filter(p -> {
                try {
                    return Files.isRegularFile(p) && (((Integer) Files.getAttribute(p, "unix:mode")) & 06000) != 0;
                } catch (Exception e) {
                    return false;
                }
            }).count();
        }
        assumeTrue(onHost > 0, "the host has no setuid program");
        // a stored image has none: the image store clears every set-id bit when it stores an image
        assertThat(r.stdoutText()).matches("setuid programs " + (systemImage() ? "[1-9]\\d*" : "0") + "\nraised \\[]\n");
    }

    /**
     * The agent runs as the same uid as the code, so only its non-dumpable flag keeps the code out
     * of its memory, environment and descriptors (where the host channel lives); ptrace is filtered.
     */
    @Test
    void agentMemoryEnvironmentAndDescriptorsAreInaccessible() {
        ExecResult r = ok(python(py("""
                print([l for l in open("/proc/1/status") if l.startswith("Uid:")][0], end="")
                for p in ["environ", "mem", "maps", "auxv", "syscall", "stack", "pagemap", "io"]:
                    attempt(p, lambda: open("/proc/1/" + p, "rb").read(16))
                attempt("mem for writing", lambda: open("/proc/1/mem", "wb"))
                for p in ["fd", "fdinfo", "map_files"]:
                    attempt(p, lambda: os.listdir("/proc/1/" + p))
                attempt("fd/3", lambda: os.open("/proc/1/fd/3", os.O_RDWR))
                for p in ["root", "cwd", "exe"]:
                    attempt(p, lambda: os.readlink("/proc/1/" + p))
                attempt("root/", lambda: os.listdir("/proc/1/root/"))
                print("ptrace attach", sc(101, 16, 1, 0, 0))
                %s
                print("process_vm_readv", sc(310, 1, 0, 0, 0, 0, 0))
                """.formatted(gvisor()
                        // This Sentry has no pidfd_open (ENOSYS): there is no pidfd to ask pidfd_getfd with.
                        ? "attempt(\"pidfd_open\", lambda: os.pidfd_open(1))"
                        : "print(\"pidfd_getfd\", sc(438, os.pidfd_open(1), 3, 0))"))));
        if (gvisor()) {
            // A gap of the gVisor tier: this Sentry checks the ptrace access the agent's non-dumpable
            // flag denies for its memory only, so the code, which shares the agent's uid, can read
            // the agent's environ, maps and auxv and list its descriptors. It still cannot open
            // them (ENODEV), read or write the agent's memory, or trace it.
            assertThat(r.stdoutText()).isEqualTo("""
                    Uid:\t1000\t1000\t1000\t1000
                    environ: ok
                    mem: EACCES Permission denied
                    maps: ok
                    auxv: ok
                    syscall: ENOENT No such file or directory
                    stack: ENOENT No such file or directory
                    pagemap: ENOENT No such file or directory
                    io: EACCES Permission denied
                    mem for writing: EACCES Permission denied
                    fd: ok
                    fdinfo: ok
                    map_files: ENOENT No such file or directory
                    fd/3: ENODEV No such device
                    root: EACCES Permission denied
                    cwd: EACCES Permission denied
                    exe: EACCES Permission denied
                    root/: EACCES Permission denied
                    ptrace attach result=-1 errno=1
                    pidfd_open: ENOSYS Function not implemented
                    process_vm_readv result=-1 errno=1
                    """);
            return;
        }
        assertThat(r.stdoutText()).isEqualTo("""
                Uid:\t1000\t1000\t1000\t1000
                environ: EACCES Permission denied
                mem: EACCES Permission denied
                maps: EACCES Permission denied
                auxv: EACCES Permission denied
                syscall: EACCES Permission denied
                stack: EACCES Permission denied
                pagemap: EACCES Permission denied
                io: EACCES Permission denied
                mem for writing: EACCES Permission denied
                fd: EACCES Permission denied
                fdinfo: EACCES Permission denied
                map_files: EACCES Permission denied
                fd/3: EACCES Permission denied
                root: EACCES Permission denied
                cwd: EACCES Permission denied
                exe: EACCES Permission denied
                root/: EACCES Permission denied
                ptrace attach result=-1 errno=1
                pidfd_getfd result=-1 errno=1
                process_vm_readv result=-1 errno=1
                """);
    }

    /** A process may make itself a likelier OOM victim, never exempt itself from the OOM killer. */
    @Test
    void oomScoreCannotBeLowered() {
        ExecResult r = ok(python(py("""
                def adj(v):
                    fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
                    try:
                        os.write(fd, str(v).encode())
                    finally:
                        os.close(fd)
                attempt("-1000", lambda: adj(-1000))
                attempt("-1", lambda: adj(-1))
                attempt("agent -1000", lambda: write_to("/proc/1/oom_score_adj"))
                print(open("/proc/self/oom_score_adj").read(), end="")
                """)));
        if (gvisor()) {
            // The Sentry has no OOM killer of its own: a task's oom_score_adj is a number it keeps and
            // lowering one's own is allowed. What the host's OOM killer sees is the Sentry's host
            // process, whose score the code cannot reach; over the memory limit the whole sandbox ends.
            assertThat(r.stdoutText()).isEqualTo("""
                    -1000: ok
                    -1: ok
                    agent -1000: EACCES Permission denied
                    -1
                    """);
            return;
        }
        assertThat(r.stdoutText()).isEqualTo("""
                -1000: EACCES Permission denied
                -1: EACCES Permission denied
                agent -1000: EACCES Permission denied
                0
                """);
    }

    /** No terminal: nothing to push keystrokes into (TIOCSTI) or to hijack. */
    @Test
    void thereIsNoTerminalToInjectInto() {
        ExecResult r = ok(python(py("""
                import fcntl, termios
                attempt("/dev/tty", lambda: open("/dev/tty", "rb"))
                for fd in (0, 1, 2):
                    attempt(f"TIOCSTI on {fd}", lambda: fcntl.ioctl(fd, termios.TIOCSTI, b"x"))
                attempt("/dev/ptmx", lambda: open("/dev/ptmx", "rb"))
                """)));
        // The Sentry's /dev/tty has no terminal behind it (EIO). Every tier has a devpts instance of the
        // sandbox's own (for executions on a terminal, TerminalContract), so /dev/ptmx opens: a
        // pseudo-terminal the code opens is the sandbox's, with no host terminal to reach.
        assertThat(r.stdoutText()).isEqualTo("""
                /dev/tty: %s
                TIOCSTI on 0: ENOTTY Inappropriate ioctl for device
                TIOCSTI on 1: ENOTTY Inappropriate ioctl for device
                TIOCSTI on 2: ENOTTY Inappropriate ioctl for device
                /dev/ptmx: %s
                """.formatted(gvisor() ? "EIO Input/output error" : "ENXIO No such device or address", "ok"));
    }
}
