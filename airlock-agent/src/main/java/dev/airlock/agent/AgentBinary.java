package dev.airlock.agent;

import dev.airlock.core.AirlockException;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The static executables this module compiles, shipped as class-path resources: the agent, placed
 * into an image by its driver, and Airlock's own container runtime (airlock-launch), placed on the
 * host by the OCI driver when it is chosen.
 */
public final class AgentBinary {

    public static final String FILE_NAME = "airlock-agent";
    public static final String LAUNCHER_FILE_NAME = "airlock-launch";

    private static final Map<String, byte[]> BYTES = new ConcurrentHashMap<>();

    private AgentBinary() {
    }

    /** Writes the agent to {@code dir/airlock-agent} with mode 0755 and returns that path. */
    public static Path installTo(Path dir) throws IOException {
        return install(dir, FILE_NAME, bytes(FILE_NAME, "src/main/c/agent.c"), "rwxr-xr-x");
    }

    /**
     * Places the launcher in {@code dir} (host root's alone) with mode 0700 and returns its path:
     * {@code airlock-launch-<the first 16 hex digits of its SHA-256>}, so that Airlock versions
     * side by side on one host (a CLI beside a server, an upgrade) never run each other's launcher.
     * A file of that name is this very program already: it is kept.
     */
    public static Path installLauncherTo(Path dir) throws IOException {
        Path target = dir.resolve(LAUNCHER_FILE_NAME + "-" + digest(LAUNCHER_FILE_NAME).substring(0, 16));
        return Files.isExecutable(target) ? target
                : install(dir, target.getFileName().toString(), bytes(LAUNCHER_FILE_NAME, "src/main/c/launch.c"), "rwx------");
    }

    /** The SHA-256 (hex) of executable {@code name}, written beside it by build.sh: known without reading the program. */
    private static String digest(String name) throws IOException {
        try (InputStream in = AgentBinary.class.getResourceAsStream("/dev/airlock/agent/" + name + ".sha256")) {
            String hex = in == null ? "" : new String(in.readAllBytes(), java.nio.charset.StandardCharsets.US_ASCII).strip();
            if (!hex.matches("[0-9a-f]{64}")) {
                throw AirlockException.internal("the digest of " + name + " is missing from the class path or malformed: build airlock-agent"
                        + " with Maven, whose build.sh writes it", null);
            }
            return hex;
        }
    }

    private static Path install(Path dir, String name, byte[] program, String mode) throws IOException {
        Path target = dir.resolve(name);
        // Write aside and rename: the old file may be running (ETXTBSY) or read-only.
        Path temporary = Files.createTempFile(dir, name, ".tmp");
        try {
            Files.write(temporary, program);
            Files.setPosixFilePermissions(temporary, PosixFilePermissions.fromString(mode));
            Files.move(temporary, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(temporary);
        }
        return target;
    }

    private static byte[] bytes(String name, String source) throws IOException {
        byte[] cached = BYTES.get(name);
        if (cached == null) {
            String resource = "/dev/airlock/agent/" + name;
            try (InputStream in = AgentBinary.class.getResourceAsStream(resource)) {
                if (in == null) {
                    throw AirlockException.internal("the executable " + resource + " is missing from the class path:"
                            + " build airlock-agent with Maven, which compiles " + source, null);
                }
                cached = in.readAllBytes();
            }
            BYTES.put(name, cached);
        }
        return cached;
    }
}
