package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Limits;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
        check("open files", "Max open files", limits.openFiles(), "ulimit -Hn, or LimitNOFILE= in a systemd unit");
        check("file size", "Max file size", limits.fileSizeBytes(), "ulimit -Hf, or LimitFSIZE= in a systemd unit");
    }

    private static void check(String what, String row, long wanted, String command) {
        OptionalLong hard = hardLimit(row);
        if (hard.isPresent() && wanted > hard.getAsLong()) {
            throw AirlockException.invalid("the sandbox's " + what + " limit of " + wanted + " is above the Airlock server's own hard limit of "
                    + hard.getAsLong() + ", which sandboxes inherit: ask for at most that, or start the server with a higher limit ("
                    + command + ")");
        }
    }

    /** The hard limit of one row of /proc/self/limits; empty when unlimited or unreadable. */
    static OptionalLong hardLimit(String row) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/limits"), StandardCharsets.US_ASCII)) {
                if (line.startsWith(row)) {
                    String[] fields = line.substring(row.length()).trim().split("\\s+");
                    return fields.length >= 2 && !fields[1].equals("unlimited")
                            ? OptionalLong.of(Long.parseLong(fields[1])) : OptionalLong.empty();
                }
            }
        } catch (IOException | NumberFormatException e) {
            // unknown: let the agent report it
        }
        return OptionalLong.empty();
    }
}
