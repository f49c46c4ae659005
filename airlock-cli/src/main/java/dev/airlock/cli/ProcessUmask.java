package dev.airlock.cli;

import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Lets the sandboxes' own ids read and enter what Airlock makes for them. A sandbox's root file
 * system, bundle and run directory are made by this process as host root and then read by the
 * sandbox's user namespace, whose ids are not root's: a umask that takes read or execute from
 * group or others (systemd's {@code UMask=0077}, an operator's shell) makes its directories 0700 and
 * every start fails ("lstat .../rootfs/proc: permission denied"). So the process keeps the umask's
 * write bits and clears its read and execute bits. What must stay private is made so explicitly
 * (the data directory is 0700; the token 0600). The umask is read from {@code /proc/self/status}
 * and changed through libc only when it needs to be, so a one-shot's start pays nothing for it.
 */
final class ProcessUmask {

    /** Group's and others' read and execute. */
    private static final int READ_AND_ENTER = 055;

    private ProcessUmask() {
    }

    static void letSandboxesRead() {
        int current;
        try {
            current = current();
        } catch (IOException | RuntimeException e) {
            return; // no /proc: a host Airlock's sandboxes cannot run on anyway
        }
        if ((current & READ_AND_ENTER) == 0) {
            return;
        }
        try {
            MethodHandle umask = Linker.nativeLinker().downcallHandle(Linker.nativeLinker().defaultLookup().find("umask").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
            int ignored = (int) umask.invokeExact(current & ~READ_AND_ENTER);
        } catch (Throwable e) {
            throw new IllegalStateException("cannot set this process's umask to "
                    + Integer.toOctalString(current & ~READ_AND_ENTER) + ": " + e, e);
        }
    }

    /** The umask, as the kernel reports it ({@code Umask:\t0077}). */
    static int current() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("Umask:")) {
                return Integer.parseInt(line.substring("Umask:".length()).trim(), 8);
            }
        }
        throw new IOException("/proc/self/status has no Umask line");
    }
}
