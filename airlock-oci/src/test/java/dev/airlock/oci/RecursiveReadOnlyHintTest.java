package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.SandboxId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A host whose runtime or kernel cannot bind a directory recursively read-only (runc before 1.1,
 * Linux before 5.12) must not run a sandbox with a writable submount below /usr: the start fails,
 * and says what to upgrade instead of mount's bare EINVAL. The runtime here is a stand-in that
 * answers as such a runc does.
 */
class RecursiveReadOnlyHintTest {

    private static final SandboxId ID = SandboxId.random("hinttest");

    @Test
    void aRuntimeThatCannotBindRecursivelyReadOnlySaysWhatToUpgrade(@TempDir Path dir) throws IOException {
        OciRuntime runc = standIn(dir, "level=error msg=\"runc run failed: unable to start container process: error during container"
                + " init: error mounting \\\"/usr\\\" to rootfs at \\\"/usr\\\": mount_setattr /usr: invalid argument\"");

        assertThatThrownBy(() -> runc.runDetached(ID, dir, null, dir.resolve("log")))
                .isInstanceOf(AirlockException.class)
                .hasMessageContaining("could not start sandbox " + ID + ": level=error")
                .hasMessageContaining("mount_setattr /usr: invalid argument")
                .hasMessageContaining(OciRuntime.RECURSIVE_READ_ONLY_NEEDED)
                .hasMessageEndingWith("(run 'airlock doctor' to see what this host supports)");
    }

    @Test
    void anotherFailureIsToldAsItIsWithoutTheHint(@TempDir Path dir) throws IOException {
        OciRuntime runc = standIn(dir, "level=error msg=\"runc run failed: container with given ID already exists\"");

        assertThatThrownBy(() -> runc.runDetached(ID, dir, null, dir.resolve("log")))
                .hasMessageContaining("container with given ID already exists")
                .satisfies(e -> org.assertj.core.api.Assertions.assertThat(e.getMessage()).doesNotContain("recursively read-only"));
    }

    /** A program named runc that prints {@code error} as its last line and fails, whatever it is asked. */
    private static OciRuntime standIn(Path dir, String error) throws IOException {
        Path bin = Files.createDirectories(dir.resolve("bin"));
        Path runc = bin.resolve("runc");
        Files.writeString(runc, "#!/bin/sh\ncat <<'EOF'\n" + error + "\nEOF\nexit 1\n");
        Files.setPosixFilePermissions(runc, PosixFilePermissions.fromString("rwx------"));
        return OciRuntime.find(runc.toString());
    }
}
