package dev.airlock.server.snapshot;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.HostFiles;
import dev.airlock.server.command.Command.SnapshotView;
import dev.airlock.server.wire.Json;
import tools.jackson.databind.JsonNode;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

/**
 * Snapshots' {@code /workspace} files as host trees, for drivers that layer a restored sandbox's
 * {@code /workspace} on one copy-on-write: made once per snapshot digest from the verified blobs,
 * shared by every sandbox that holds a lease on it, removed with the last lease and at every start.
 */
public final class WorkspaceTrees {

    private final SnapshotStore store;
    private final Path trees;
    /** How many live sandboxes use each tree, by snapshot digest (hex); guarded by itself. */
    private final Map<String, Integer> treeUsers = new HashMap<>();

    /** Starts with no tree under {@code trees} (which only host root may enter): no sandbox outlives its server. */
    WorkspaceTrees(Path trees, SnapshotStore store) throws IOException {
        this.trees = trees;
        this.store = store;
        HostFiles.deleteTree(trees);
        Files.createDirectory(trees);
        Files.setPosixFilePermissions(trees, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    }

    /**
     * One sandbox's use of a snapshot's tree ({@link #lease}); closing it (once) lets the
     * tree go when no other sandbox uses it.
     */
    public final class TreeLease implements AutoCloseable {
        private final String key;
        private final Path path;
        private boolean closed;

        private TreeLease(String key, Path path) {
            this.key = key;
            this.path = path;
        }

        /** The tree: the snapshot's /workspace, read-only, owned by {@link dev.airlock.core.SandboxSpec#WORKSPACE_OWNER}. */
        public Path path() {
            return path;
        }

        @Override
        public void close() {
            synchronized (treeUsers) {
                if (closed) {
                    return;
                }
                closed = true;
                if (treeUsers.merge(key, -1, Integer::sum) <= 0) {
                    treeUsers.remove(key);
                    HostFiles.deleteTree(trees.resolve(key));
                }
            }
        }
    }

    /**
     * The snapshot's {@code /workspace} files as a host tree, for a sandbox whose driver layers
     * {@code /workspace} on it copy-on-write ({@link dev.airlock.core.IsolationDriver#layersWorkspace}):
     * made once per snapshot digest, while the first sandbox needs it, from the blobs, each checked
     * against its digest as it is copied (a tampered snapshot is refused, CONFLICT); kept while any
     * sandbox holds a lease on it; removed with the last lease, and at every start. Only regular
     * files and their directories are made (a snapshot holds nothing else), owned by the canonical
     * sandbox ids, files read-only to all but their owner's copy-ups in an overlay; under {@code
     * trees/}, which only host root may enter.
     */
    TreeLease lease(SnapshotView s) {
        String key = s.digest().substring("sha256:".length());
        if (!SnapshotStore.DIGEST.matcher(key).matches()) {
            throw SnapshotStore.tampered(s, "its digest is not a SHA-256");
        }
        synchronized (treeUsers) {
            Path tree = trees.resolve(key);
            if (!treeUsers.containsKey(key)) {
                extractWorkspace(s, tree);
            }
            treeUsers.merge(key, 1, Integer::sum);
            return new TreeLease(key, tree);
        }
    }

    /** The directories under {@code trees/}: one per snapshot digest in use, for tests and the leak check. */
    Path treesRoot() {
        return trees;
    }

    private void extractWorkspace(SnapshotView s, Path tree) {
        JsonNode manifest = store.verifiedManifest(s);
        Path incoming = trees.resolve("incoming-" + HexFormat.of().formatHex(SnapshotStore.randomBytes()));
        try {
            makeDirectory(incoming);
            for (JsonNode f : manifest.path("files")) {
                String path = f.path("path").asString();
                if (!path.startsWith(SnapshotStore.WORKSPACE + "/")) {
                    continue;
                }
                String digest = f.path("sha256").asString();
                String[] names = path.substring(SnapshotStore.WORKSPACE.length() + 1).split("/", -1);
                for (String name : names) {
                    if (name.isEmpty() || name.equals(".") || name.equals("..") || name.indexOf('\0') >= 0) {
                        throw SnapshotStore.tampered(s, "an entry names " + Json.printable(path));
                    }
                }
                if (!SnapshotStore.DIGEST.matcher(digest).matches()) {
                    throw SnapshotStore.tampered(s, "the entry " + Json.printable(path) + " names no SHA-256");
                }
                Path dir = incoming;
                for (int i = 0; i < names.length - 1; i++) {
                    dir = dir.resolve(names[i]);
                    if (!Files.isDirectory(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                        makeDirectory(dir); // fails if a file of the snapshot has the name: a manifest no sandbox made
                    }
                }
                Path file = dir.resolve(names[names.length - 1]);
                store.readBlob(s, digest, "the content of " + Json.printable(path), in -> {
                    try (OutputStream out = Files.newOutputStream(file, java.nio.file.StandardOpenOption.CREATE_NEW,
                            java.nio.file.StandardOpenOption.WRITE, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                        in.transferTo(out);
                    }
                });
                own(file, f.path("mode").asInt() & 0777);
            }
            Files.move(incoming, tree, StandardCopyOption.ATOMIC_MOVE);
        } catch (java.nio.file.FileAlreadyExistsException e) {
            throw SnapshotStore.tampered(s, "it names " + Json.printable(e.getFile()) + " twice, or as a file and a directory");
        } catch (IOException e) {
            throw new AirlockException(Kind.UNAVAILABLE, "snapshot " + s.id() + ": cannot lay out its files for the restore: " + e.getMessage(), e);
        } finally {
            HostFiles.deleteTree(incoming);
        }
    }

    static void makeDirectory(Path dir) throws IOException {
        Files.createDirectory(dir);
        own(dir, 0755);
    }

    /** Gives {@code p} the canonical sandbox owner and {@code mode}. */
    static void own(Path p, int mode) throws IOException {
        Files.setAttribute(p, "unix:uid", dev.airlock.core.SandboxSpec.WORKSPACE_OWNER, java.nio.file.LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(p, "unix:gid", dev.airlock.core.SandboxSpec.WORKSPACE_OWNER, java.nio.file.LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(p, "unix:mode", mode, java.nio.file.LinkOption.NOFOLLOW_LINKS);
    }
}
