package dev.airlock.microvm;

import dev.airlock.agent.AgentBinary;
import dev.airlock.core.AirlockException;
import dev.airlock.core.HostEtc;
import dev.airlock.core.HostFiles;
import dev.airlock.core.SandboxSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import java.util.zip.GZIPOutputStream;

/**
 * The guest's initramfs, the image {@code system} as a microVM sees it: the guest init as
 * {@code /init}, the agent at {@code /.airlock/airlock-agent}, the kernel modules the init loads (their signatures cut off: {@link #withoutSignature}),
 * the seccomp filter it installs for the agent ({@link dev.airlock.agent.SeccompFilter}, {@code /.airlock/seccomp.bpf}),
 * the merged-/usr links, {@code /home/user} linked to {@code /workspace}, and an {@code /etc} like
 * the OCI driver's system image (a {@code sandbox} user, no host accounts, no resolver, plus the
 * host's harmless /etc files, copied). The host's
 * {@code /usr} itself is not in it: the guest mounts it read-only over 9p, so it is shared, never
 * copied. One initramfs serves every guest of a driver instance; all that is writable in a guest is
 * its own tmpfs.
 */
final class GuestImage {

    private static final Logger LOG = LoggerFactory.getLogger(GuestImage.class);

    static final int SANDBOX_UID = 1000;
    private static final String INIT_RESOURCE = "/dev/airlock/microvm/airlock-guest-init";
    /** The most of the host's /etc copied into the image: a bound on what an odd host could make it hold. */
    private static final long MAX_HOST_ETC_BYTES = 32L << 20;

    private GuestImage() {
    }

    /** Writes the initramfs (a gzip-compressed newc cpio) for {@code kernel} to {@code target}. */
    static void write(GuestKernel kernel, Path hostRoot, Path target) {
        Path scratch = target.resolveSibling(target.getFileName() + ".agent");
        try (OutputStream file = Files.newOutputStream(target);
             GZIPOutputStream gzip = new GZIPOutputStream(file, 1 << 16);
             Cpio cpio = new Cpio(gzip)) {
            cpio.file("init", 0755, initBinary());
            Files.createDirectories(scratch);
            cpio.file(".airlock/airlock-agent", 0755, Files.readAllBytes(AgentBinary.installTo(scratch)));
            for (String module : kernel.load()) {
                cpio.file(".airlock/modules/" + module + ".ko", 0644,
                        withoutSignature(Files.readAllBytes(kernel.modules().resolve(module + ".ko"))));
            }
            cpio.file(".airlock/seccomp.bpf", 0644, dev.airlock.agent.SeccompFilter.compile());
            cpio.file(".airlock/modules.load", 0644, (String.join("\n", kernel.load()) + "\n").getBytes(StandardCharsets.US_ASCII));
            // The kernel opens /dev/console for init before init mounts devtmpfs over /dev.
            cpio.characterDevice("dev/console", 0600, 5, 1);
            for (String dir : List.of("usr", "proc", "sys", "workspace", "inputs")) {
                cpio.directory(dir, 0755);
            }
            // Where other drivers mount the sandbox's run directory: here its public files alone when it has any (the init
            // copies them in), and not listable.
            cpio.directory("run/airlock", 0711);
            cpio.directory("tmp", 01777);
            cpio.symlink(SandboxSpec.USER_HOME.substring(1), SandboxSpec.USER_HOME_TARGET);
            for (String link : List.of("bin", "sbin", "lib", "lib32", "lib64", "libx32")) {
                Path host = hostRoot.resolve(link);
                if (Files.isSymbolicLink(host)) {
                    cpio.symlink(link, Files.readSymbolicLink(host).toString());
                } else if (Files.isDirectory(host)) {
                    throw AirlockException.unavailable("the host's /" + link + " is a directory, not a link into /usr: the microvm driver"
                            + " shares only /usr with its guests, so it needs a merged-/usr host (Debian 12 and later are)");
                }
            }
            writeEtc(cpio);
            copyHostEtc(cpio, hostRoot.resolve("etc"));
        } catch (IOException e) {
            throw AirlockException.internal("cannot write the microVM guest's initramfs " + target + ": " + e.getMessage(), e);
        } finally {
            HostFiles.deleteTree(scratch);
        }
    }

    /** What the kernel's module loader looks for at the end of a signed module. */
    private static final byte[] SIGNATURE_MARKER = "~Module signature appended~\n".getBytes(StandardCharsets.US_ASCII);
    /** The {@code struct module_signature} before the marker; its last 4 bytes are the signature's length, big-endian. */
    private static final int SIGNATURE_INFO_BYTES = 12;

    /**
     * A module without its appended signature, or as it is when it has none. Checking a signature costs
     * the guest an RSA verification per module at every boot, slow under software emulation (about 0.25 s
     * of QEMU's CPU time for the initramfs's modules), and proves nothing here: Debian's kernel does not
     * enforce signatures ({@code module.sig_enforce} is off), the only process that loads modules is the
     * guest init, as root, from this initramfs, and the modules came from the Debian package that apt
     * verified. The guest kernel marks itself tainted ("module verification failed") and loads them.
     */
    static byte[] withoutSignature(byte[] module) {
        int end = module.length - SIGNATURE_MARKER.length;
        if (end < SIGNATURE_INFO_BYTES
                || !Arrays.equals(module, end, module.length, SIGNATURE_MARKER, 0, SIGNATURE_MARKER.length)) {
            return module;
        }
        long signatureBytes = ByteBuffer.wrap(module, end - 4, 4).getInt() & 0xffffffffL;
        long kept = end - SIGNATURE_INFO_BYTES - signatureBytes;
        if (kept <= 0) {
            throw AirlockException.internal("a guest kernel module's signature trailer says its signature is " + signatureBytes
                    + " bytes long, more than the module: the prepared kernel is damaged; remove the microvm cache directory", null);
        }
        return Arrays.copyOf(module, (int) kept);
    }

    private static byte[] initBinary() throws IOException {
        try (InputStream in = GuestImage.class.getResourceAsStream(INIT_RESOURCE)) {
            if (in == null) {
                throw AirlockException.internal("the guest init " + INIT_RESOURCE + " is missing from the class path: build"
                        + " airlock-microvm with Maven, which compiles src/main/c/guest-init.c", null);
            }
            return in.readAllBytes();
        }
    }

    private static void writeEtc(Cpio cpio) throws IOException {
        etc(cpio, "passwd", "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                + "sandbox:x:" + SANDBOX_UID + ":" + SANDBOX_UID + ":sandbox:/workspace:/bin/sh\n"
                + "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
        etc(cpio, "group", "root:x:0:\nsandbox:x:" + SANDBOX_UID + ":\nnogroup:x:65534:\n");
        etc(cpio, "hostname", "sandbox\n");
        etc(cpio, "hosts", "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost\n");
        // No resolver: names are never resolved inside a sandbox.
        etc(cpio, "resolv.conf", "");
        etc(cpio, "nsswitch.conf", "passwd: files\ngroup: files\nhosts: files\n");
    }

    private static void etc(Cpio cpio, String name, String content) throws IOException {
        cpio.file("etc/" + name, 0644, content.getBytes(StandardCharsets.UTF_8));
    }

    private static void copyHostEtc(Cpio cpio, Path hostEtc) throws IOException {
        List<String> names = HostEtc.names(hostEtc);
        long[] budget = {MAX_HOST_ETC_BYTES};
        for (String name : names.stream().sorted().toList()) {
            Path source = hostEtc.resolve(name);
            if (Files.exists(source, LinkOption.NOFOLLOW_LINKS)) {
                copy(cpio, source, "etc/" + name, budget);
            }
        }
    }

    /** Copies a host tree as it is, links as links, never following one; what is not a file, link or directory is left out. */
    private static void copy(Cpio cpio, Path source, String path, long[] budget) throws IOException {
        PosixFileAttributes attributes = Files.readAttributes(source, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        int mode = modeOf(attributes.permissions());
        if (attributes.isSymbolicLink()) {
            cpio.symlink(path, Files.readSymbolicLink(source).toString());
        } else if (attributes.isDirectory()) {
            cpio.directory(path, mode);
            try (Stream<Path> children = Files.list(source)) {
                for (Path child : children.sorted().toList()) {
                    copy(cpio, child, path + "/" + child.getFileName(), budget);
                }
            }
        } else if (attributes.isRegularFile()) {
            if (!attributes.permissions().contains(PosixFilePermission.OTHERS_READ)) {
                return;                 // not for everyone on the host: not for the sandbox either
            }
            budget[0] -= attributes.size();
            if (budget[0] < 0) {
                throw AirlockException.unavailable("the host's /etc files for the guest image are larger than "
                        + (MAX_HOST_ETC_BYTES >> 20) + " MiB, at " + source + ": the microvm driver copies them into every instance's initramfs");
            }
            cpio.file(path, mode, Files.readAllBytes(source));
        } else {
            LOG.debug("left {} out of the guest image: not a file, link or directory", source);
        }
    }

    private static int modeOf(Set<PosixFilePermission> permissions) {
        int mode = 0;
        for (PosixFilePermission p : permissions) {
            mode |= 1 << (8 - p.ordinal());
        }
        return mode;
    }
}
