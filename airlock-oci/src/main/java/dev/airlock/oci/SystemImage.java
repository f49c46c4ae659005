package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.HostEtc;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.image.ImageSkeleton;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;

/**
 * The default image, {@code system}, assembled from the host instead of downloaded: the host's
 * {@code /usr} read-only (with the merged-/usr links), {@code /usr/local} hidden, and a
 * synthesized {@code /etc} that holds a {@code sandbox} user, no host accounts and no resolver.
 *
 * <p>The root directory it builds is shared, read-only, by every sandbox of one engine: all
 * writable places ({@code /tmp}, {@code /workspace}, {@code /dev/shm}) are fresh tmpfs mounts per
 * sandbox, so nothing one sandbox writes is seen by the next.
 */
final class SystemImage implements SandboxRoot {

    static final int SANDBOX_UID = ImageSkeleton.SANDBOX_UID;
    /** Where the agent binary sits in the image (the driver installs it there). */
    static final String AGENT_DIR = "/.airlock";

    private final Path hostRoot;
    private final Path rootfs;
    private final List<OciConfig.Mount> mounts;

    private SystemImage(Path hostRoot, Path rootfs, List<OciConfig.Mount> mounts) {
        this.hostRoot = hostRoot;
        this.rootfs = rootfs;
        this.mounts = mounts;
    }

    /** Lays out the shared root under {@code rootfs} (which must not exist yet). */
    static SystemImage build(Path hostRoot, Path rootfs) {
        try {
            Files.createDirectories(rootfs);
            List<OciConfig.Mount> mounts = new ArrayList<>();
            mounts.add(OciConfig.Mount.bindReadOnly(hostRoot.resolve("usr"), "/usr"));
            // Hide /usr/local: it is where a host keeps its own, unpackaged tools and secrets.
            mounts.add(OciConfig.Mount.tmpfs("/usr/local", 4096, 0755, 0, true));
            // /inputs is always there: empty and read-only unless the sandbox has inputs mounted on it.
            for (String dir : List.of("usr", "etc", "proc", "dev", "tmp", "workspace", "run/airlock", ".airlock", "inputs")) {
                Files.createDirectories(rootfs.resolve(dir));
            }
            Files.createDirectories(rootfs.resolve("home"));
            Files.createSymbolicLink(rootfs.resolve(SandboxSpec.USER_HOME.substring(1)), Path.of(SandboxSpec.USER_HOME_TARGET));
            // Merged /usr: /bin, /lib... are links into /usr, exactly as on the host.
            for (String link : List.of("bin", "sbin", "lib", "lib32", "lib64", "libx32")) {
                Path target = hostRoot.resolve(link);
                if (Files.isSymbolicLink(target)) {
                    Files.createSymbolicLink(rootfs.resolve(link), Files.readSymbolicLink(target));
                } else if (Files.isDirectory(target)) {
                    Files.createDirectories(rootfs.resolve(link));
                    mounts.add(OciConfig.Mount.bindReadOnly(target, "/" + link));
                }
            }
            // The runtime gives a tmpfs the mode of the directory it is mounted on: /tmp must be sticky.
            Files.setPosixFilePermissions(rootfs.resolve("tmp"), PosixFilePermissions.fromString("rwxrwxrwx"));
            Files.setAttribute(rootfs.resolve("tmp"), "unix:mode", 01777);
            ImageSkeleton.writeEtc(rootfs.resolve("etc"));
            mounts.addAll(hostEtcMounts(hostRoot, rootfs));
            return new SystemImage(hostRoot, rootfs, List.copyOf(mounts));
        } catch (IOException e) {
            throw AirlockException.internal("cannot lay out the system image under " + rootfs + ": " + e.getMessage(), e);
        }
    }

    private static List<OciConfig.Mount> hostEtcMounts(Path hostRoot, Path rootfs) throws IOException {
        Path hostEtc = hostRoot.resolve("etc");
        List<String> names = HostEtc.names(hostEtc);
        List<OciConfig.Mount> mounts = new ArrayList<>();
        for (String name : names) {
            Path source = hostEtc.resolve(name);
            Path target = rootfs.resolve("etc").resolve(name);
            if (Files.isSymbolicLink(source)) {
                Files.createDirectories(target.getParent());
                Files.createSymbolicLink(target, Files.readSymbolicLink(source));
            } else if (Files.isDirectory(source)) {
                Files.createDirectories(target);
                mounts.add(OciConfig.Mount.bindReadOnly(source, "/etc/" + name));
            } else if (Files.isRegularFile(source)) {
                Files.createDirectories(target.getParent());
                Files.createFile(target);
                mounts.add(OciConfig.Mount.bindReadOnly(source, "/etc/" + name));
            }
        }
        return mounts;
    }

    @Override
    public Path rootfs() {
        return rootfs;
    }

    @Override
    public List<OciConfig.Mount> mounts() {
        return mounts;
    }

    /**
     * Whether {@code program} resolves on the sandbox's PATH. The sandbox sees the host's /usr
     * (without /usr/local) and /etc/alternatives, so the host's view of those answers it.
     */
    boolean hasExecutable(String program) {
        for (String dir : List.of("usr/bin", "usr/sbin", "bin", "sbin")) {
            Path candidate = hostRoot.resolve(dir).resolve(program);
            try {
                if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)
                        && !candidate.toRealPath().startsWith(hostRoot.resolve("usr/local"))) {
                    return true;
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return false;
    }
}
