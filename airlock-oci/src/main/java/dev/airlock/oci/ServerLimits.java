package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Limits;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;

/**
 * The server process's own hard rlimits, which every sandbox inherits through the runtime. The
 * agent lowers them to the sandbox's limits itself (the runtime cannot set rlimits in a user
 * namespace that host root does not own), and lowering is all an unprivileged process may do: a
 * sandbox limit above the server's own is refused here, before anything starts, instead of
 * failing inside.
 */
final class ServerLimits {

    private ServerLimits() {
    }

    static void checkInheritable(Limits limits) {
        List<String> rows = limitRows();
        check("open files", hardLimit(rows, "Max open files"), limits.openFiles(), "ulimit -Hn, or LimitNOFILE= in a systemd unit");
        check("file size", hardLimit(rows, "Max file size"), limits.fileSizeBytes(), "ulimit -Hf, or LimitFSIZE= in a systemd unit");
    }

    private static void check(String what, OptionalLong hard, long wanted, String command) {
        if (hard.isPresent() && wanted > hard.getAsLong()) {
            throw AirlockException.invalid("the sandbox's " + what + " limit of " + wanted + " is above the Airlock server's own hard limit of "
                    + hard.getAsLong() + ", which sandboxes inherit: ask for at most that, or start the server with a higher limit ("
                    + command + ")");
        }
    }

    /** The hard limit of one row of /proc/self/limits; empty when unlimited or unreadable. */
    static OptionalLong hardLimit(String row) {
        return hardLimit(limitRows(), row);
    }

    /** The rows of /proc/self/limits, read once per check; none when unreadable (the agent then reports a limit it cannot set). */
    private static List<String> limitRows() {
        try {
            return Files.readAllLines(Path.of("/proc/self/limits"), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            return List.of();
        }
    }

    private static OptionalLong hardLimit(List<String> rows, String row) {
        for (String line : rows) {
            if (line.startsWith(row)) {
                String[] fields = line.substring(row.length()).trim().split("\\s+");
                try {
                    return fields.length >= 2 && !fields[1].equals("unlimited") ? OptionalLong.of(Long.parseLong(fields[1])) : OptionalLong.empty();
                } catch (NumberFormatException e) {
                    return OptionalLong.empty();
                }
            }
        }
        return OptionalLong.empty();
    }
}
