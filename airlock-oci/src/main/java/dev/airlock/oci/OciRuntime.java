package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Printable;
import dev.airlock.core.SandboxId;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One OCI runtime binary (runc, crun or runsc) and the few commands Airlock gives it. Containers
 * live in the runtime's default state root, so an operator's own {@code runc list} shows them.
 */
final class OciRuntime {

    private static final Pattern LIST_ID = Pattern.compile("\"id\"\\s*:\\s*\"([^\"]+)\"");
    private static final long COMMAND_TIMEOUT_SECONDS = 60;

    private final String name;
    private final Path binary;

    private OciRuntime(String name, Path binary) {
        this.name = name;
        this.binary = binary;
    }

    /** Finds {@code name} on the PATH, or explains how to install it. */
    static OciRuntime find(String name) {
        if (!List.of("runc", "crun", "runsc").contains(name)) {
            throw AirlockException.invalid("unknown OCI runtime '" + name + "': choose runc, crun or runsc");
        }
        Path found = locate(name);
        if (found == null) {
            throw AirlockException.unavailable("OCI runtime '" + name + "' is not installed: install it (apt-get install "
                    + (name.equals("runsc") ? "runsc from gVisor's repository" : name) + ") or choose another runtime");
        }
        return new OciRuntime(name, found);
    }

    static Path locate(String name) {
        String path = System.getenv().getOrDefault("PATH", "") + ":/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/bin:/usr/local/sbin";
        for (String dir : path.split(File.pathSeparator)) {
            if (dir.isEmpty()) {
                continue;
            }
            Path candidate = Path.of(dir, name);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    String name() {
        return name;
    }

    Path binary() {
        return binary;
    }

    /**
     * Creates and starts the container in the background ({@code run --detach}). The runtime's own
     * messages go to {@code log}; they are read back only if it fails.
     *
     * @return the host pid of the container's first process (the agent)
     */
    long runDetached(SandboxId id, Path bundle, Path log) {
        Path pidFile = bundle.resolve("init.pid");
        Result r = exec(log, "run", "--detach", "--pid-file", pidFile.toString(), "--bundle", bundle.toString(), id.value());
        if (r.exitCode != 0) {
            throw new AirlockException(AirlockException.Kind.UNAVAILABLE,
                    name + " could not start sandbox " + id + ": " + lastError(log) + " (run 'airlock doctor' to see what this host supports)");
        }
        try {
            return Long.parseLong(Files.readString(pidFile, StandardCharsets.US_ASCII).trim());
        } catch (IOException | NumberFormatException e) {
            throw AirlockException.unavailable(name + " started sandbox " + id + " but wrote no pid of its first process: " + e.getMessage());
        }
    }

    /** Force-deletes a container: kills what is left in it and removes its state and cgroup. */
    boolean delete(String id) {
        return exec(null, "delete", "--force", id).exitCode == 0;
    }

    /** Ids of the containers the runtime knows about. */
    List<String> list() {
        // 'runc list' fails outright when a container is deleted while it lists (stat: no such file):
        // with other sandboxes coming and going that is common, so try again before giving up.
        Result r = exec(null, "list", "--format", "json");
        for (int attempt = 1; attempt < 10 && r.exitCode != 0; attempt++) {
            try {
                Thread.sleep(20L * attempt);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            r = exec(null, "list", "--format", "json");
        }
        List<String> ids = new ArrayList<>();
        if (r.exitCode == 0) {
            Matcher m = LIST_ID.matcher(r.output);
            while (m.find()) {
                ids.add(m.group(1));
            }
        }
        return ids;
    }

    String version() {
        Result r = exec(null, "--version");
        return r.exitCode == 0 ? r.output.lines().findFirst().orElse("").trim() : "unknown";
    }

    private record Result(int exitCode, String output) {
    }

    private Result exec(Path log, String... args) {
        List<String> command = new ArrayList<>();
        command.add(binary.toString());
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .redirectErrorStream(true);
        if (log != null) {
            // A detached container inherits the runtime's stdio: a file, so nothing waits on a pipe it holds.
            pb.redirectOutput(log.toFile());
        }
        // Runtime commands are short and must finish even when the caller is being cancelled:
        // a half-done create or delete would leave a container behind.
        boolean interrupted = Thread.interrupted();
        try {
            Process p = pb.start();
            String out = log == null ? new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8) : "";
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(COMMAND_TIMEOUT_SECONDS);
            while (true) {
                try {
                    if (p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                        break;
                    }
                    p.destroyForcibly();
                    throw AirlockException.internal(name + " " + args[0] + " did not finish within " + COMMAND_TIMEOUT_SECONDS + "s", null);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            return new Result(p.exitValue(), out);
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot run " + binary + ": " + e.getMessage());
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static String lastError(Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            for (int i = lines.size() - 1; i >= 0; i--) {
                String line = lines.get(i).strip();
                if (!line.isEmpty()) {
                    return Printable.of(line, 500); // the runtime repeats what the bundle and the sandbox named
                }
            }
            return "no message";
        } catch (IOException e) {
            return "no message (" + e.getMessage() + ")";
        }
    }
}
