package dev.airlock.oci;

import dev.airlock.core.AirlockException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;

/**
 * Gives every live sandbox its own range of 65536 host ids. The kernel keeps some budgets per host
 * uid (inotify instances and watches, among others): with one shared range, one sandbox could
 * exhaust them for all. A slot is a file named by its number under {@code <state>/uid-slots},
 * created atomically and holding the owning sandbox's id, so engine instances in several
 * processes never hand out the same range, and the slots of crashed instances can be reaped.
 */
final class UidSlots {

    /** Slots from the base on: 32768 ranges of 65536 ids stay below the largest valid uid. */
    static final int SLOTS = 32768;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Path dir;
    private final long base;

    UidSlots(Path stateRoot, long base) {
        this.dir = stateRoot.resolve("uid-slots");
        this.base = base;
    }

    /** The first host id past every slot. */
    static long end(long base) {
        return base + (long) SLOTS * OciConfig.ID_RANGE;
    }

    /** Takes a free slot for {@code sandboxId} and returns the host id that sandbox uid 0 maps to. */
    long allocate(String sandboxId) {
        try {
            StateDirectory.createTraversable(dir);
            int start = RANDOM.nextInt(SLOTS);
            for (int i = 0; i < SLOTS; i++) {
                int slot = (start + i) % SLOTS;
                Path file = dir.resolve(Integer.toString(slot));
                try {
                    Files.writeString(file, sandboxId, StandardCharsets.US_ASCII,
                            StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
                    return base + (long) slot * OciConfig.ID_RANGE;
                } catch (FileAlreadyExistsException taken) {
                    // another sandbox holds it: try the next
                } catch (IOException e) {
                    // Created but not written (the disk is full): an empty slot file would be held forever.
                    Files.deleteIfExists(file);
                    throw e;
                }
            }
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot allocate host ids under " + dir + ": " + e.getMessage());
        }
        throw new AirlockException(AirlockException.Kind.LIMIT_EXCEEDED, "all " + SLOTS + " host id ranges are in use: destroy sandboxes first");
    }

    void release(long hostBase) {
        try {
            Files.deleteIfExists(dir.resolve(Long.toString((hostBase - base) / OciConfig.ID_RANGE)));
        } catch (IOException e) {
            // the slot stays taken until the next reap; ranges are plentiful
        }
    }

    /** Slot files whose owner's id starts with {@code prefix}. */
    List<Path> held(String prefix) {
        List<Path> found = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return found;
        }
        try (DirectoryStream<Path> slots = Files.newDirectoryStream(dir)) {
            for (Path slot : slots) {
                try {
                    if (Files.readString(slot, StandardCharsets.US_ASCII).startsWith(prefix)) {
                        found.add(slot);
                    }
                } catch (IOException e) {
                    // released while we looked
                }
            }
        } catch (IOException e) {
            return found;
        }
        return found;
    }
}
