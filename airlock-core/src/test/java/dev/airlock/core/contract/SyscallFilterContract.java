package dev.airlock.core.contract;

import dev.airlock.core.EndReason;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Sandbox;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static dev.airlock.core.contract.Hostile.py;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The seccomp allow-list: every denied family answers EPERM (clone3 ENOSYS), and the arguments
 * are chosen so that without the filter the kernel would answer something else (success, EFAULT,
 * EINVAL, EBADF, ENOENT, ENOSYS...): the EPERM is the filter's. System calls of the other x86
 * ABIs (x32, i386 via int 0x80) kill the process.
 */
public abstract class SyscallFilterContract extends ContractTestBase {

    protected SyscallFilterContract(DriverContract driver) {
        super(driver);
    }

    /**
     * Python set-up for the rows: {@code buf} a zeroed 4 KiB buffer, {@code B} its address,
     * {@code E} the address of an empty C string, {@code IOV} an iovec of 8 bytes of {@code buf},
     * {@code PID} the caller's pid. A row that would fork without the filter exits in the child.
     */
    private static final String SETUP = """
            buf = ctypes.create_string_buffer(4096)
            B = ctypes.addressof(buf)
            empty = ctypes.create_string_buffer(b"")
            E = ctypes.addressof(empty)
            iov = (ctypes.c_ulong * 2)(B + 1024, 8)
            IOV = ctypes.addressof(iov)
            PID = os.getpid()
            """;

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            # name                               | call                                  | unfiltered, for an unprivileged caller
            ptrace(PTRACE_TRACEME)               | sc(101, 0, 0, 0, 0)                   | 0
            ptrace(PTRACE_ATTACH, agent)         | sc(101, 16, 1, 0, 0)                  | EPERM (agent not dumpable) - kept for completeness
            process_vm_readv(self)               | sc(310, PID, IOV, 1, IOV, 1, 0)       | 8
            process_vm_writev(self)              | sc(311, PID, IOV, 1, IOV, 1, 0)       | 8
            mount(NULL...)                       | sc(165, 0, 0, 0, 0, 0)                | EFAULT
            umount2("")                          | sc(166, E, 0)                         | ENOENT
            unshare(CLONE_NEWUSER)               | sc(272, 0x10000000)                   | 0
            unshare(CLONE_NEWTIME)               | sc(272, 0x80)                         | EPERM (no CAP_SYS_ADMIN); clone() cannot carry it
            unshare(0)                           | sc(272, 0)                            | 0
            unshare(CLONE_FILES+CLONE_FS)        | sc(272, 0x600)                        | 0
            setns(0, 0)                          | sc(308, 0, 0)                         | EINVAL
            bpf(BPF_MAP_CREATE, size 0)          | sc(321, 0, B, 0)                      | EINVAL
            perf_event_open(zeroed attr)         | sc(298, B, 0, -1, -1, 0)              | EINVAL/EACCES
            keyctl(KEYCTL_GET_KEYRING_ID, 0)     | sc(250, 0, 0, 0, 0, 0)                | EINVAL
            add_key(NULL...)                     | sc(248, 0, 0, 0, 0, 0)                | EFAULT
            request_key(NULL...)                 | sc(249, 0, 0, 0, 0)                   | EFAULT
            io_uring_setup(1, zeroed params)     | sc(425, 1, B)                         | a descriptor
            io_uring_enter(-1)                   | sc(426, -1, 0, 0, 0, 0, 0)            | EBADF
            io_uring_register(-1)                | sc(427, -1, 0, 0, 0)                  | EBADF
            kexec_load                           | sc(246, 0, 0, 0, 0)                   | EPERM/ENOSYS
            kexec_file_load(-1, -1)              | sc(320, -1, -1, 0, E, 0)              | EPERM/ENOSYS
            init_module(NULL)                    | sc(175, 0, 0, E)                      | EPERM/ENOSYS
            finit_module(-1)                     | sc(313, -1, E, 0)                     | EPERM/ENOSYS
            delete_module("")                    | sc(176, E, 0)                         | EPERM/ENOSYS
            userfaultfd(UFFD_USER_MODE_ONLY)     | sc(323, 1)                            | a descriptor
            pivot_root("", "")                   | sc(155, E, E)                         | EPERM/ENOENT
            chroot("")                           | sc(161, E)                            | ENOENT
            open_by_handle_at(-1, NULL)          | sc(304, -1, 0, 0)                     | EPERM/EFAULT
            name_to_handle_at(-1, "")            | sc(303, -1, E, B, B + 64, 0)          | ENOENT
            kcmp(self, self)                     | sc(312, PID, PID, 0, 0, 0)            | 0
            pidfd_getfd(-1)                      | sc(438, -1, 0, 0)                     | EBADF
            syslog(SYSLOG_ACTION_READ_ALL)       | sc(103, 3, B, 16)                     | EPERM (dmesg_restrict)
            acct(NULL)                           | sc(163, 0)                            | EPERM
            swapon("")                           | sc(167, E, 0)                         | EPERM
            reboot(bad magic)                    | sc(169, 0, 0, 0, 0)                   | EINVAL
            quotactl(0, "")                      | sc(179, 0, E, 0, 0)                   | ENOENT/EINVAL
            settimeofday(NULL, NULL)             | sc(164, 0, 0)                         | 0
            clock_settime(REALTIME, zero)        | sc(227, 0, B)                         | EPERM
            adjtimex(zeroed)                     | sc(159, B)                            | a clock state
            fanotify_init(0, 0)                  | sc(300, 0, 0)                         | EPERM/0
            modify_ldt(read)                     | sc(154, 0, B, 16)                     | 0
            iopl(3)                              | sc(172, 3)                            | EPERM
            ioperm(0, 1, 1)                      | sc(173, 0, 1, 1)                      | EPERM
            personality(ADDR_NO_RANDOMIZE)       | sc(135, 0x0040000)                    | 0
            fsopen("tmpfs")                      | sc(430, 0, 0)                         | EFAULT
            open_tree(-1, "")                    | sc(428, -1, E, 0)                     | ENOENT
            move_mount                           | sc(429, -1, E, -1, E, 0)              | ENOENT
            mount_setattr                        | sc(442, -1, E, 0, 0, 0)               | EINVAL
            lookup_dcookie                       | sc(212, 0, 0, 0)                      | EPERM/ENOSYS
            vhangup                              | sc(153)                               | EPERM
            process_madvise(-1)                  | sc(440, -1, 0, 0, 0, 0)               | EBADF
            memfd_secret(0)                      | sc(447, 0)                            | a descriptor/ENOSYS
            landlock_create_ruleset(VERSION)     | sc(444, 0, 0, 1)                      | the ABI version
            set_mempolicy(MPOL_DEFAULT)          | sc(238, 0, 0, 0)                      | 0
            move_pages(self, 0)                  | sc(279, 0, 0, 0, 0, 0, 0)             | 0
            mbind(NULL, 0)                       | sc(237, 0, 0, 0, 0, 0, 0)             | 0
            """)
    void deniedSystemCallFailsWithEperm(String name, String call, String unfiltered) {
        ExecResult r = ok(python(py(SETUP + """
                out = %s
                if os.getpid() != PID:
                    os._exit(0)
                print(out)
                """.formatted(call))));
        assertThat(r.stdoutText()).as("%s (without the filter: %s)", name, unfiltered).isEqualTo("result=-1 errno=1\n");
    }

    /** No namespace can be made: every CLONE_NEW* flag is refused on clone and unshare alike. */
    @ParameterizedTest(name = "{0}")
    @CsvSource({
            "CLONE_NEWNS, 0x00020000", "CLONE_NEWCGROUP, 0x02000000", "CLONE_NEWUTS, 0x04000000", "CLONE_NEWIPC, 0x08000000",
            "CLONE_NEWUSER, 0x10000000", "CLONE_NEWPID, 0x20000000", "CLONE_NEWNET, 0x40000000",
            "CLONE_NEWUSER|CLONE_NEWNS, 0x10020000"})
    void namespaceFlagIsRefusedOnCloneAndUnshare(String name, String flag) {
        long flags = Long.decode(flag);
        ExecResult r = ok(python(py("""
                PID = os.getpid()
                c = sc(56, %d | 17, 0, 0, 0, 0)
                if os.getpid() != PID:
                    os._exit(0)
                print("clone", c)
                print("unshare", sc(272, %d))
                """.formatted(flags, flags))));
        assertThat(r.stdoutText()).isEqualTo("clone result=-1 errno=1\nunshare result=-1 errno=1\n");
    }

    /** clone3 passes its flags in memory the filter cannot inspect: it must look unimplemented. */
    @Test
    void clone3IsReportedAsNotImplemented() {
        ExecResult r = ok(python(py(SETUP + """
                # A zeroed clone_args (size 88) would be a plain fork; one with CLONE_NEWUSER a new namespace.
                out1 = sc(435, B, 88)
                if os.getpid() != PID:
                    os._exit(0)
                ctypes.c_uint64.from_address(B).value = 0x10000000
                out2 = sc(435, B, 88)
                if os.getpid() != PID:
                    os._exit(0)
                print(out1)
                print(out2)
                """)));
        assertThat(r.stdoutText()).isEqualTo("result=-1 errno=38\nresult=-1 errno=38\n");
    }

    /** The counterpart: the filter still lets ordinary programs fork, thread and run children. */
    @Test
    void plainForkThreadsAndExecStillWork() {
        ExecResult r = ok(python("""
                import os, subprocess, threading
                pid = os.fork()
                if pid == 0:
                    os._exit(7)
                print("fork", os.waitpid(pid, 0)[1] >> 8)
                t = threading.Thread(target=lambda: print("thread", flush=True)); t.start(); t.join()
                print(subprocess.run(["sh", "-c", "echo exec"], capture_output=True, text=True).stdout, end="")
                """));
        assertThat(r.stdoutText()).isEqualTo("fork 7\nthread\nexec\n");
    }

    /**
     * An x32-ABI call (number | 0x40000000) is not on the native-only list: the process is killed
     * with SIGSYS. gVisor's Sentry has no x32 ABI and applies the allow-list to the number as it is:
     * not on the list, refused with EPERM like every other refused call; it never runs either way.
     */
    @Test
    void x32SystemCallKillsTheProcess() {
        ExecResult r = python(py("""
                print("calling", flush=True)
                print(sc(0x40000000 | 39), flush=True)
                """));
        if (gvisor()) {
            assertThat(ok(r).stdoutText()).isEqualTo("calling\nresult=-1 errno=1\n");
            return;
        }
        assertThat(r.endReason()).as(r.stdoutText()).isEqualTo(EndReason.SIGNALED);
        assertThat(r.exitCode()).isEqualTo(128 + 31);
        assertThat(r.message()).isEqualTo("killed by signal 31");
        assertThat(r.stdoutText()).isEqualTo("calling\n");
    }

    /**
     * The i386 ABI through int 0x80 has other numbers (39 is mkdir there, getppid on x86_64): a
     * filter that did not check the architecture would judge it as x86_64's call. What must hold on
     * every host is that the call never takes effect, and the call chosen shows it: mkdir of a
     * directory that is looked for afterwards. How it is stopped depends on the kernel in front of
     * it: under the host's kernel (and a guest's) the filter kills the process with SIGSYS — or,
     * where the kernel refuses int 0x80 itself (some virtualized kernels do: the same program run
     * bare on the host gets SIGSEGV), SIGSEGV comes before the filter is asked. gVisor's Sentry has
     * no i386 ABI: depending on the host's CPU and its platform, the process is killed, or the trap
     * reaches the Sentry, which serves it as the x86_64 call of that number (39: getpid, answered
     * with the pid; on AMD EPYC hosts), judged by the allow-list as that call. Either way the i386
     * call never runs.
     */
    @Test
    @Tag("smoke")
    void i386SystemCallThroughInt80NeverTakesEffect() throws Exception {
        try (Sandbox sb = engine.create(spec())) {
            ExecResult r = python(sb, INT80_MKDIR);
            String out = r.stdoutText();
            assertThat(out).as("stderr: %s", r.stderrText()).startsWith("calling\n");
            if (r.endReason() == EndReason.SIGNALED) {
                assertThat(out).as("the call never returned").isEqualTo("calling\n");
                if (gvisor() || hostRefusesInt80()) {
                    assertThat(r.exitCode()).as("killed by the filter or by the kernel").isIn(128 + 11, 128 + 31);
                } else {
                    assertThat(r.exitCode()).as("killed by the filter").isEqualTo(128 + 31);
                }
            } else {
                assertThat(gvisor()).as("only gVisor's Sentry may return from an i386 call instead of killing: %s", out).isTrue();
                assertThat(ok(r).stdoutText()).as("served as the x86_64 call, or refused").matches("calling\nreturned -?\\d+\n");
            }
            ExecResult look = exec(sb, "/bin/sh", "-c", "test -e /tmp/int80-ran && echo made || echo absent");
            assertThat(ok(look).stdoutText()).as("the i386 mkdir never ran").isEqualTo("absent\n");
        }
    }

    /**
     * push rbx; mov eax, 39 (i386 mkdir); mov ebx, PATH; mov ecx, 0755; int 0x80; pop rbx; ret —
     * called from Python through ctypes. The i386 ABI passes 32-bit pointers, so the path lives in a
     * page mapped below 4 GiB (MAP_32BIT); it is not the only thing that could fail, so the program
     * says which step it reached.
     */
    private static final String INT80_MKDIR = """
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
            page = libc.mmap(None, 4096, 7, 0x22 | 0x40, -1, 0)  # rwx, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT
            assert page not in (None, 2**64 - 1) and page < 2**32, "no page below 4 GiB: %r errno %d" % (page, ctypes.get_errno())
            path = page + 256
            ctypes.memmove(path, b"/tmp/int80-ran\\0", 15)
            code = (bytes([0x53, 0xb8, 39, 0, 0, 0, 0xbb]) + path.to_bytes(4, "little")
                    + bytes([0xb9]) + (0o755).to_bytes(4, "little") + bytes([0xcd, 0x80, 0x5b, 0xc3]))
            ctypes.memmove(page, code, len(code))
            f = ctypes.CFUNCTYPE(ctypes.c_int)(page)
            print("calling", flush=True)
            print("returned", f(), flush=True)
            """;

    /** Whether the same kind of call, run bare on the host with no filter, dies of SIGSEGV (i386 getpid: no effect if it runs). */
    private static boolean hostRefusesInt80() throws Exception {
        String getpid = """
                import ctypes, mmap
                code = bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3])
                m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
                m.write(code)
                f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
                print("returned", f(), flush=True)
                """;
        Process p = new ProcessBuilder("python3", "-c", getpid).redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        return p.waitFor() == 128 + 11 || p.exitValue() == -11;
    }
}
