package dev.airlock.microvm;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Printable;
import dev.airlock.oci.image.ImageStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.TimeUnit;

/**
 * The read-only disks that carry stored images into guests: one squashfs file per image tree, where
 * the image store says ({@link ImageStore#diskOf}: beside the tree, removed with it), made once from
 * the tree by {@code mksquashfs} when a guest first needs it and shared by every guest of that image
 * (QEMU opens it read-only; the host's page cache holds one copy of what guests read). A guest
 * mounts it ({@code guest-init.c}, mount_image) instead of the host's /usr over 9p, which QEMU
 * cannot migrate.
 *
 * <p>Uncompressed: under software emulation the guest's decompression would cost more CPU than the
 * disk's size costs space. Owners, modes and times are the tree's; the file system's own time is 0,
 * so the same tree makes the same disk. Made under a lock ({@code .lock} in the disks' directory)
 * into a temporary name and renamed, so a guest never sees half a disk.
 */
final class GuestDisks {

    private static final Logger LOG = LoggerFactory.getLogger(GuestDisks.class);
    static final String TOOL = "mksquashfs";
    /** The bound on one disk's making: mksquashfs of a large image (a GiB) on a slow disk. */
    private static final long MAKE_TIMEOUT_SECONDS = 600;

    private GuestDisks() {
    }

    /** The disk of the image {@code image} holds, made now if it is not there yet. */
    static Path diskOf(ImageStore store, ImageStore.Lease image) {
        Path disk = store.diskOf(image.digest());
        Path dir = disk.getParent();
        if (Files.isRegularFile(disk)) {
            return disk;
        }
        try {
            Files.createDirectories(dir);
            // this process's threads, then other processes: a file lock is the whole JVM's
            synchronized (GuestDisks.class) {
                try (FileChannel lockFile = FileChannel.open(dir.resolve(".lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                     FileLock ignored = lockFile.lock()) {
                    if (!Files.isRegularFile(disk)) {
                        make(image.rootfs(), disk);
                    }
                }
            }
            return disk;
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot make the microVM disk of the image '" + image.name() + "' in " + dir + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw AirlockException.unavailable("interrupted while making the microVM disk of the image '" + image.name() + "'");
        }
    }

    private static void make(Path rootfs, Path disk) throws IOException, InterruptedException {
        String tool = find();
        Path partial = disk.resolveSibling(disk.getFileName() + ".partial");
        Files.deleteIfExists(partial);
        Path log = disk.resolveSibling(disk.getFileName() + ".log");
        long started = System.nanoTime();
        Process p = new ProcessBuilder(tool, rootfs.toString(), partial.toString(), "-noappend", "-no-xattrs", "-no-exports",
                "-noI", "-noD", "-noF", "-noX", "-mkfs-time", "0", "-quiet", "-no-progress")
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        if (!p.waitFor(MAKE_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            p.waitFor();
            Files.deleteIfExists(partial);
            throw AirlockException.unavailable(TOOL + " took longer than " + MAKE_TIMEOUT_SECONDS + "s to make the disk of " + rootfs);
        }
        String said = Files.readString(log, StandardCharsets.UTF_8).strip();
        Files.deleteIfExists(log);
        if (p.exitValue() != 0) {
            Files.deleteIfExists(partial);
            throw AirlockException.unavailable(TOOL + " could not make the microVM disk of the image " + rootfs + " (exit status "
                    + p.exitValue() + "): " + Printable.of(said, 500));
        }
        // read by each guest's jailed QEMU, as the initramfs is: the image's files are readable by every sandbox of it anyway
        Files.setPosixFilePermissions(partial, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        Files.move(partial, disk, StandardCopyOption.ATOMIC_MOVE);
        LOG.info("made the microVM disk {} ({} MiB) in {} ms", disk, Files.size(disk) >> 20,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
    }

    /** mksquashfs, on PATH or in the usual places. */
    static String find() {
        String path = System.getenv().getOrDefault("PATH", "") + ":/usr/bin:/usr/sbin:/sbin:/bin";
        for (String d : path.split(File.pathSeparator)) {
            if (!d.isEmpty() && Files.isExecutable(Path.of(d, TOOL))) {
                return Path.of(d, TOOL).toString();
            }
        }
        throw AirlockException.unavailable(TOOL + " is not installed: the microvm driver gives a stored image to its guests as a"
                + " squashfs disk; install it (apt-get install squashfs-tools), or use the image 'system'");
    }
}
