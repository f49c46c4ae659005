package dev.airlock.oci.image;

import dev.airlock.core.SandboxSpec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;

/**
 * What every sandbox's root needs, whatever image it comes from: the mount points the driver
 * mounts on (real directories, never links), {@code /tmp} sticky, and a synthesized {@code /etc}
 * holding the {@code sandbox} user, no other account (the image's shadow files and the backups of
 * its account files go) and no resolver (names are never resolved inside a sandbox). As in the
 * {@code system} image, {@code /run} holds only the sandbox's own directory (an image's /run is
 * runtime state of a booted system, meaningless here) and there is no {@code /sys} (no sandbox
 * gets sysfs). {@code /home/user} is a link to {@code /workspace} ({@link SandboxSpec#USER_HOME}).
 */
public final class ImageSkeleton {

    /** The user every sandbox process runs as. */
    public static final int SANDBOX_UID = 1000;

    /** Directories the driver mounts on or the agent uses. */
    public static final List<String> MOUNT_POINTS = List.of("proc", "dev", "tmp", "workspace", "run/airlock", ".airlock", "inputs");

    private ImageSkeleton() {
    }

    /** Writes the files of the synthesized /etc into {@code etc}, replacing what is there (never through a link). */
    public static void writeEtc(Path etc) throws IOException {
        write(etc.resolve("passwd"),
                "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                        + "sandbox:x:" + SANDBOX_UID + ":" + SANDBOX_UID + ":sandbox:/workspace:/bin/sh\n"
                        + "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
        write(etc.resolve("group"), "root:x:0:\nsandbox:x:" + SANDBOX_UID + ":\nnogroup:x:65534:\n");
        write(etc.resolve("hostname"), "sandbox\n");
        write(etc.resolve("hosts"), "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost\n");
        write(etc.resolve("resolv.conf"), "");
        write(etc.resolve("nsswitch.conf"), "passwd: files\ngroup: files\nhosts: files\n");
    }

    /** Account files of an image that the synthesized /etc leaves out. */
    private static final List<String> OTHER_ACCOUNT_FILES = List.of("shadow", "gshadow", "shadow-", "gshadow-", "passwd-", "group-",
            "subuid", "subgid");

    /** Adds the mount points and /etc to an image's root (whose entries were placed by {@link LayerApplier}). */
    static void apply(Path root) throws IOException {
        dev.airlock.core.HostFiles.deleteTree(root.resolve("sys"));
        dev.airlock.core.HostFiles.deleteTree(root.resolve("run"));
        for (String dir : MOUNT_POINTS) {
            realDirectory(root, dir);
        }
        Files.setAttribute(root.resolve("tmp"), "unix:mode", 01777, LinkOption.NOFOLLOW_LINKS);
        // E2B's home: what the image had there is replaced, as /workspace's files are hidden by its mount.
        realDirectory(root, "home");
        Path home = root.resolve(SandboxSpec.USER_HOME.substring(1));
        dev.airlock.core.HostFiles.deleteTree(home);
        Files.createSymbolicLink(home, Path.of(SandboxSpec.USER_HOME_TARGET));
        realDirectory(root, "etc");
        writeEtc(root.resolve("etc"));
        for (String name : OTHER_ACCOUNT_FILES) {
            dev.airlock.core.HostFiles.deleteTree(root.resolve("etc").resolve(name));
        }
    }

    /** Makes each component of {@code path} a real directory, replacing a link or file found on the way. */
    private static void realDirectory(Path root, String path) throws IOException {
        Path p = root;
        for (String part : path.split("/")) {
            p = p.resolve(part);
            if (!Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                dev.airlock.core.HostFiles.deleteTree(p);
                Files.createDirectory(p);
                Files.setAttribute(p, "unix:mode", 0755, LinkOption.NOFOLLOW_LINKS);
            }
        }
    }

    private static void write(Path file, String content) throws IOException {
        if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            dev.airlock.core.HostFiles.deleteTree(file);
        } else {
            Files.delete(file); // a new file: a hard link to it elsewhere in the image keeps the old content
        }
        Files.writeString(file, content, java.nio.file.StandardOpenOption.CREATE_NEW);
        Files.setAttribute(file, "unix:mode", 0644, LinkOption.NOFOLLOW_LINKS);
    }
}
