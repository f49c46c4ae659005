package dev.airlock.oci.image;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Printable;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * Paths inside an image's root directory on the host, resolved the way the kernel resolves them
 * inside the sandbox: a symbolic link is followed, but an absolute target starts again at the
 * image's root and {@code ..} at the root stays there. Whatever the links in an image say, no
 * path this class gives leaves the root, so the host can open, create and check files of an
 * image without ever reaching its own.
 *
 * <p>It also holds the rule every stored link obeys ({@link #checkedLinkTarget}): a link's target
 * is relative, climbs ({@code ..}) only at its start and only as far as the image's root, then
 * only descends. Such a link cannot lead out of the root even when a host program follows it
 * naively.
 */
final class ImageTree {

    /** Longest path (bytes) an entry or a link target may have: Linux's PATH_MAX. */
    static final int MAX_PATH_BYTES = 4096;
    private static final int MAX_LINKS_FOLLOWED = 40;

    private ImageTree() {
    }

    /**
     * The components of an archive entry's name, relative to the image's root: a leading
     * {@code ./} and empty or {@code .} components are dropped; an absolute name or one with
     * {@code ..} is refused, as it would write outside the root.
     */
    static List<String> entryComponents(String name) {
        if (name.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > MAX_PATH_BYTES) {
            throw refused(name, "its name is longer than " + MAX_PATH_BYTES + " bytes");
        }
        if (name.startsWith("/")) {
            throw refused(name, "it is an absolute path, which would write outside the image's root");
        }
        List<String> parts = new ArrayList<>();
        for (String part : name.split("/")) {
            if (part.equals("..")) {
                throw refused(name, "it has a '..' component, which would write outside the image's root");
            }
            if (part.indexOf('\0') >= 0) {
                throw refused(name, "its name holds a NUL byte");
            }
            if (!part.isEmpty() && !part.equals(".")) {
                parts.add(part);
            }
        }
        return parts;
    }

    /**
     * The directory {@code components} names inside {@code root}, following links confined to the
     * root and creating missing directories (mode 0755) when {@code create}.
     *
     * @return the directory's real place under root, relative to it (no link in it)
     * @throws AirlockException if a component is a file, or the path does not exist and may not be created
     */
    static List<String> resolveDirectory(Path root, List<String> components, boolean create, String entry) throws IOException {
        List<String> physical = new ArrayList<>();
        Deque<String> pending = new ArrayDeque<>(components);
        int links = 0;
        while (!pending.isEmpty()) {
            String part = pending.pollFirst();
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                if (!physical.isEmpty()) {
                    physical.removeLast();
                }
                continue;
            }
            Path candidate = at(root, physical).resolve(part);
            if (Files.isSymbolicLink(candidate)) {
                if (++links > MAX_LINKS_FOLLOWED) {
                    throw refused(entry, "more than " + MAX_LINKS_FOLLOWED + " symbolic links lie on its path");
                }
                String target = Files.readSymbolicLink(candidate).toString();
                if (target.startsWith("/")) {
                    physical.clear();
                }
                List<String> targetParts = List.of(target.split("/"));
                for (int i = targetParts.size() - 1; i >= 0; i--) {
                    pending.addFirst(targetParts.get(i));
                }
                continue;
            }
            if (!Files.exists(candidate, LinkOption.NOFOLLOW_LINKS)) {
                if (!create) {
                    throw new AirlockException(AirlockException.Kind.NOT_FOUND, "no directory " + String.join("/", components));
                }
                Files.createDirectory(candidate);
                Files.setAttribute(candidate, "unix:mode", 0755, LinkOption.NOFOLLOW_LINKS);
            } else if (!Files.isDirectory(candidate, LinkOption.NOFOLLOW_LINKS)) {
                throw refused(entry, "'" + Printable.of(String.join("/", physical) + "/" + part) + "' on its path is not a directory");
            }
            physical.add(part);
        }
        return physical;
    }

    /** The host path of {@code components} (which must hold no link) under {@code root}. */
    static Path at(Path root, List<String> components) {
        Path p = root;
        for (String c : components) {
            p = p.resolve(c);
        }
        return p;
    }

    /**
     * Whether {@code path} (as seen inside the sandbox, e.g. {@code usr/bin/python3}) leads, through
     * links confined to the root, to an executable regular file of the image.
     */
    static boolean isExecutable(Path root, String path) {
        try {
            List<String> parts = new ArrayList<>(entryComponents(path));
            String name = parts.removeLast();
            for (int hop = 0; hop < MAX_LINKS_FOLLOWED; hop++) {
                List<String> dir = resolveDirectory(root, parts, false, path);
                Path file = at(root, dir).resolve(name);
                if (!Files.isSymbolicLink(file)) {
                    return Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)
                            && ((Integer) Files.getAttribute(file, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 0111) != 0;
                }
                String target = Files.readSymbolicLink(file).toString();
                List<String> next = target.startsWith("/") ? new ArrayList<>() : new ArrayList<>(dir);
                for (String p : target.split("/")) {
                    next.add(p);
                }
                while (!next.isEmpty() && (next.getLast().isEmpty() || next.getLast().equals("."))) {
                    next.removeLast();
                }
                if (next.isEmpty() || next.getLast().equals("..")) {
                    return false;
                }
                name = next.removeLast();
                parts = next;
            }
            return false;
        } catch (IOException | AirlockException e) {
            return false;
        }
    }

    /**
     * The target a symbolic link at {@code linkDir/...} (its directory, relative to the root, with no
     * link in it) is stored with: an absolute target becomes the relative one that means the same
     * inside the sandbox; {@code .} and empty components go.
     *
     * @throws AirlockException if the target climbs above the image's root, or climbs after it
     *                          descended ({@code a/../b}: where that leads depends on other links)
     */
    static String checkedLinkTarget(List<String> linkDir, String target, String entry) {
        if (target.isEmpty()) {
            throw refused(entry, "it is a symbolic link with an empty target");
        }
        if (target.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > MAX_PATH_BYTES) {
            throw refused(entry, "its link target is longer than " + MAX_PATH_BYTES + " bytes");
        }
        boolean absolute = target.startsWith("/");
        int up = 0;
        List<String> down = new ArrayList<>();
        for (String part : target.split("/")) {
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                if (absolute || !down.isEmpty()) {
                    throw refused(entry, "its link target '" + Printable.of(target) + "' climbs with '..' after descending,"
                            + " so where it leads depends on other links");
                }
                up++;
            } else {
                down.add(part);
            }
        }
        if (up > linkDir.size()) {
            throw refused(entry, "its link target '" + Printable.of(target) + "' points outside the image's root");
        }
        if (absolute) {
            up = linkDir.size();
        }
        List<String> parts = new ArrayList<>();
        for (int i = 0; i < up; i++) {
            parts.add("..");
        }
        parts.addAll(down);
        return parts.isEmpty() ? "." : String.join("/", parts);
    }

    static AirlockException refused(String entry, String why) {
        return AirlockException.invalid("the archive's entry '" + Printable.of(entry) + "' is refused: " + why);
    }
}
