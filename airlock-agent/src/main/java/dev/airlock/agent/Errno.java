package dev.airlock.agent;

import dev.airlock.core.SandboxAgent.FileOperationException;

import java.util.Map;

/**
 * The errno numbers the agent reports in FAILED, named. The numbers are Linux's generic ones
 * (x86-64, arm64 and most other architectures), the only platform the agent runs on.
 */
final class Errno {

    static final int EFBIG = 27;

    /** Reported when FAILED carries 0: the agent refused without a system call failing. */
    static final String UNSPECIFIED = "EUNSPECIFIED";

    private static final Map<Integer, String> NAMES = Map.ofEntries(
            Map.entry(1, "EPERM"), Map.entry(2, "ENOENT"), Map.entry(5, "EIO"), Map.entry(6, "ENXIO"),
            Map.entry(7, "E2BIG"), Map.entry(9, "EBADF"), Map.entry(11, "EAGAIN"), Map.entry(12, "ENOMEM"),
            Map.entry(13, "EACCES"), Map.entry(16, "EBUSY"), Map.entry(17, "EEXIST"), Map.entry(18, "EXDEV"),
            Map.entry(19, "ENODEV"), Map.entry(20, "ENOTDIR"), Map.entry(21, "EISDIR"), Map.entry(22, "EINVAL"),
            Map.entry(23, "ENFILE"), Map.entry(24, "EMFILE"), Map.entry(26, "ETXTBSY"), Map.entry(EFBIG, "EFBIG"),
            Map.entry(28, "ENOSPC"), Map.entry(30, "EROFS"), Map.entry(31, "EMLINK"), Map.entry(36, "ENAMETOOLONG"),
            Map.entry(38, "ENOSYS"), Map.entry(39, "ENOTEMPTY"), Map.entry(40, "ELOOP"), Map.entry(75, "EOVERFLOW"),
            Map.entry(95, "EOPNOTSUPP"), Map.entry(116, "ESTALE"), Map.entry(122, "EDQUOT"),
            Map.entry(99, "EADDRNOTAVAIL"), Map.entry(101, "ENETUNREACH"), Map.entry(104, "ECONNRESET"),
            Map.entry(110, "ETIMEDOUT"), Map.entry(111, "ECONNREFUSED"), Map.entry(113, "EHOSTUNREACH"),
            Map.entry(125, "ECANCELED"));

    private Errno() {
    }

    /** The symbolic name, such as {@code ENOENT}; {@code ERRNO_<n>} for a number not in the table. */
    static String name(int errno) {
        if (errno == 0) {
            return UNSPECIFIED;
        }
        String name = NAMES.get(errno);
        return name != null ? name : "ERRNO_" + Integer.toUnsignedString(errno);
    }

    /** E.g. "cannot stat /tmp/x in the sandbox: No such file or directory (ENOENT)". */
    static FileOperationException failure(String what, int errno, String message) {
        String name = name(errno);
        return new FileOperationException(name, what + " in the sandbox: " + message + " (" + name + ")");
    }
}
