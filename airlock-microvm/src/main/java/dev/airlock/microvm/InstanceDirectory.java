package dev.airlock.microvm;

import dev.airlock.core.AirlockException;
import dev.airlock.core.EngineInstance;

import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * How the microVM driver lays out an instance's directory ({@link EngineInstance}: its name, locks
 * and {@code <root>/engines/<instance>/}): its initramfs and one directory per guest. Only root uses
 * these directories, so they are mode 0700: a guest's jailed QEMU sees only what its jail binds into
 * its own root (the initramfs, 0644, and its own sockets' directory).
 */
final class InstanceDirectory {

    private static final String MODE = "rwx------";
    /** The microVM driver adds nothing to an instance's directory beyond what it makes per guest. */
    private static final EngineInstance.Directory PLAIN = new EngineInstance.Directory() {
        @Override
        public void prepare(Path dir) {
        }

        @Override
        public void dispose(Path dir) {
        }
    };

    private InstanceDirectory() {
    }

    /** Starts a microVM driver instance under {@code root}. */
    static EngineInstance create(Path root) {
        try {
            return EngineInstance.create(root, MODE, PLAIN);
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot create the microvm driver's state directory under " + root + ": " + e.getMessage()
                    + " (the driver needs root, or a state directory it may write)");
        }
    }

    static void createPrivate(Path dir) throws IOException {
        EngineInstance.createDirectory(dir, PosixFilePermissions.fromString(MODE));
    }
}
