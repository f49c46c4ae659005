package dev.airlock.core;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Checks the host side of a sandbox's inputs before anything is mounted: each host path must
 * exist, be a plain file or directory that any host user may read, and lie outside everything
 * Airlock and the host keep to themselves.
 *
 * <p>Symbolic links in the named path are resolved here, once, so that what is mounted is what
 * the operator named at creation time, never a link's later target. The runtime mounts the
 * resolved path a moment later: a host user who may write to one of its parent directories could
 * swap a component in between. Only the operator's own host users can; a sandbox has no writable
 * host directory to do it from.
 *
 * <p>Every driver that shows inputs checks them here, so an input means the same on every tier.
 */
public final class HostInputs {

    /**
     * Never mountable, nor anything inside them, nor anything that contains them: the kernel's
     * interfaces, the host's runtime state and sockets (the OCI runtimes' state roots, a container
     * engine's socket, systemd's) and Airlock's own default data directory (token, state database).
     */
    private static final List<Path> ALWAYS_PROTECTED = List.of(
            Path.of("/proc"), Path.of("/sys"), Path.of("/dev"), Path.of("/run"), Path.of("/var/run"),
            Path.of("/var/lib/airlock"));

    /** One input as it will be mounted: its host path with every link resolved. */
    public record Resolved(Input input, Path realPath, boolean directory) {
    }

    private final List<Path> protectedPaths;

    /**
     * @param extraProtected Airlock's state root and any further directory the operator keeps
     *                       from sandboxes (the server's data directory)
     */
    public HostInputs(Set<Path> extraProtected) {
        List<Path> named = new ArrayList<>(ALWAYS_PROTECTED);
        named.addAll(extraProtected);
        Set<Path> all = new LinkedHashSet<>();
        for (Path p : named) {
            Path abs = p.toAbsolutePath().normalize();
            all.add(abs);
            try {
                all.add(abs.toRealPath());
            } catch (IOException e) {
                // does not exist (yet): its lexical form guards it
            }
        }
        // Deepest first, so that a refusal names the most specific reason (the state root, not /run).
        this.protectedPaths = all.stream().sorted(Comparator.comparingInt(Path::getNameCount).reversed()).toList();
    }

    /** Validates every input and resolves its links; throws with what to change on the first bad one. */
    public List<Resolved> resolve(List<Input> inputs) {
        List<Resolved> resolved = new ArrayList<>(inputs.size());
        for (Input input : inputs) {
            resolved.add(resolve(input));
        }
        return resolved;
    }

    private Resolved resolve(Input input) {
        String what = "input '" + input.name() + "' (" + input.hostPath() + ")";
        refuseProtected(what, input.hostPath());
        Path real;
        try {
            real = input.hostPath().toRealPath();
        } catch (NoSuchFileException e) {
            throw AirlockException.unavailable(what + " does not exist on the host: create it, or correct the input's path in the policy");
        } catch (IOException e) {
            throw AirlockException.unavailable(what + " cannot be resolved on the host: " + e.getMessage());
        }
        if (!real.equals(input.hostPath())) {
            refuseProtected(what + ", a link to " + real + ",", real);
        }
        boolean directory = Files.isDirectory(real, LinkOption.NOFOLLOW_LINKS);
        if (!directory && !Files.isRegularFile(real, LinkOption.NOFOLLOW_LINKS)) {
            // A socket would let the sandbox talk to a host service; a device or fifo is no data.
            throw AirlockException.invalid(what + " is neither a regular file nor a directory: only files and directories can be inputs");
        }
        int mode;
        try {
            mode = (Integer) Files.getAttribute(real, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            throw AirlockException.unavailable(what + " cannot be read on the host: " + e.getMessage());
        }
        // Host owners are not mapped into the sandbox's user namespace: its user reads as "others".
        int needed = directory ? 05 : 04;
        if ((mode & needed) != needed) {
            throw AirlockException.unavailable(what + " is not readable by the sandbox: the sandbox's user counts as 'others' on the host, and "
                    + real + " is " + rwx(mode) + "; make it readable by others (chmod o+r" + (directory ? "x" : "") + ")"
                    + (directory ? ", and its files o+r, its subdirectories o+rx" : "") + ", or name a copy that is");
        }
        if (directory) {
            List<Path> below = mountsBelow(real);
            if (!below.isEmpty()) {
                // The bind is not recursive, and in the sandbox's user namespace the kernel refuses
                // to bind a tree whose submounts it would have to leave out (EINVAL): say so first.
                throw AirlockException.unavailable(what + " has " + below.size() + " mount(s) below it (" + below.getFirst()
                        + (below.size() > 1 ? ", ..." : "") + "), and inputs never show a host's mounts: name a directory without"
                        + " mounts below it, or each mount as an input of its own");
            }
        }
        return new Resolved(input, real, directory);
    }

    /** Mount points strictly below {@code dir} in this process's (the host's) mount table. */
    private static List<Path> mountsBelow(Path dir) {
        List<Path> below = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                String[] fields = line.split(" ");
                if (fields.length > 4) {
                    Path point = Path.of(unescapeMountPath(fields[4]));
                    if (point.startsWith(dir) && !point.equals(dir)) {
                        below.add(point);
                    }
                }
            }
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot read the host's mount table to check inputs: " + e.getMessage());
        }
        return below;
    }

    /** mountinfo writes space, tab, newline and backslash in a path as octal escapes ({@code \040}). */
    public static String unescapeMountPath(String field) {
        StringBuilder sb = new StringBuilder(field.length());
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\' && i + 3 < field.length() && field.substring(i + 1, i + 4).chars().allMatch(d -> d >= '0' && d <= '7')) {
                sb.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                sb.append(c);
            }
        }
        return sb.toString();
    }

    /** Refuses {@code path} if it is, lies inside, or contains a protected path. */
    private void refuseProtected(String what, Path path) {
        if (path.getNameCount() == 0) {
            throw AirlockException.invalid(what + " is the host's root directory: name the directory or file the sandbox needs");
        }
        for (Path p : protectedPaths) {
            if (path.startsWith(p) || p.startsWith(path)) {
                throw AirlockException.invalid(what + (path.equals(p) ? " is " : path.startsWith(p) ? " lies inside " : " contains ") + p
                        + ", which is never shown to a sandbox (kernel interfaces, host runtime state and sockets, Airlock's own state and data):"
                        + " name a directory outside it");
            }
        }
    }

    /**
     * Creates, under {@code dir} (mounted read-only at /inputs), one empty mount point per input:
     * a directory for a directory, a file for a file. The sandbox never sees them; its mounts cover them.
     */
    public static void createMountPoints(Path dir, List<Resolved> inputs) throws IOException {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        for (Resolved r : inputs) {
            Path point = dir.resolve(r.input().name());
            if (r.directory()) {
                Files.createDirectory(point);
                Files.setPosixFilePermissions(point, PosixFilePermissions.fromString("r-xr-xr-x"));
            } else {
                Files.createFile(point);
                Files.setPosixFilePermissions(point, PosixFilePermissions.fromString("r--r--r--"));
            }
        }
    }

    private static String rwx(int mode) {
        String letters = "rwxrwxrwx";
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 9; i++) {
            sb.append((mode & (1 << (8 - i))) != 0 ? letters.charAt(i) : '-');
        }
        return sb.toString();
    }
}
