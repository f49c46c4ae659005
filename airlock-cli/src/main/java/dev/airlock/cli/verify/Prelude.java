package dev.airlock.cli.verify;

/** Helpers a Python case may ask for with {@code "prelude": true}. */
final class Prelude {

    private Prelude() {
    }

    /**
     * {@code attempt(label, fn)} prints {@code "label: ok"} or {@code "label: EPERM Operation not
     * permitted"}; {@code sc(nr, *args)} makes a raw system call and returns {@code "result=R errno=E"};
     * {@code write_to(path)} writes one byte to a file; {@code seccomp_mode()} is the Seccomp field of
     * /proc/self/status (2: a filter is installed).
     */
    static final String PYTHON = """
            import ctypes, errno, os, sys
            libc = ctypes.CDLL(None, use_errno=True)
            libc.syscall.restype = ctypes.c_long
            def attempt(label, fn):
                try:
                    fn()
                    print(f"{label}: ok", flush=True)
                except OSError as e:
                    print(f"{label}: {errno.errorcode.get(e.errno, e.errno)} {e.strerror}", flush=True)
            def sc(nr, *args):
                ctypes.set_errno(0)
                r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
                return f"result={r} errno={ctypes.get_errno()}"
            def write_to(path, mode="w"):
                with open(path, mode) as f:
                    f.write("x")
            def seccomp_mode():
                return [l.split()[1] for l in open("/proc/self/status") if l.startswith("Seccomp:")][0]
            """;
}
