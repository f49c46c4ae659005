package dev.airlock.agent;

import dev.airlock.core.AirlockException;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;

/** The agent executable, shipped as a class-path resource and placed into an image by its driver. */
public final class AgentBinary {

    public static final String FILE_NAME = "airlock-agent";

    private static final String RESOURCE = "/dev/airlock/agent/airlock-agent";
    private static volatile byte[] bytes;

    private AgentBinary() {
    }

    /** Writes the agent to {@code dir/airlock-agent} with mode 0755 and returns that path. */
    public static Path installTo(Path dir) throws IOException {
        Path target = dir.resolve(FILE_NAME);
        // Write aside and rename: the old file may be running (ETXTBSY) or read-only.
        Path temporary = Files.createTempFile(dir, FILE_NAME, ".tmp");
        try {
            Files.write(temporary, bytes());
            Files.setPosixFilePermissions(temporary, PosixFilePermissions.fromString("rwxr-xr-x"));
            Files.move(temporary, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(temporary);
        }
        return target;
    }

    private static byte[] bytes() throws IOException {
        byte[] cached = bytes;
        if (cached == null) {
            try (InputStream in = AgentBinary.class.getResourceAsStream(RESOURCE)) {
                if (in == null) {
                    throw AirlockException.internal("the agent executable " + RESOURCE + " is missing from the class path:"
                            + " build airlock-agent with Maven, which compiles src/main/c/agent.c", null);
                }
                cached = in.readAllBytes();
            }
            bytes = cached;
        }
        return cached;
    }
}
