package dev.airlock.server.snapshot;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.HostFiles;
import dev.airlock.core.SandboxAgent;
import dev.airlock.server.command.Command.HeldSnapshot;
import dev.airlock.server.command.Command.SnapshotView;
import dev.airlock.server.http.JsonViews;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.wire.Json;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JsonNode;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Filesystem snapshots of sandboxes: the regular files of {@code /workspace} and {@code /tmp}
 * (their paths, modes and contents), kept read-only under {@code <data>/snapshots}, content-addressed:
 * each file's content is a blob named by its SHA-256, shared by every snapshot that holds it, and a
 * snapshot's digest is the SHA-256 of its manifest (every path, mode, size and blob digest), which is
 * checked again, with every blob, before each restore. A snapshot records its sandbox's profile, image
 * and image digest; a sandbox restored from it gets the same, fresh everything else.
 *
 * <p>What a sandbox can make the host do here is bounded: the walk looks at {@link #MAX_ENTRIES}
 * entries, keeps {@link #MAX_FILES} files, at most {@link #MAX_BYTES} bytes and the client's quota, in
 * {@link #DEADLINE}; a client holds at most {@link #MAX_SNAPSHOTS} snapshots and
 * {@code quotaBytes} of them (shared blobs count once per snapshot); each expires after its TTL.
 * Only regular files are kept: the agent's walk never reports directories, symbolic links or
 * special files, so empty directories and links are not in a snapshot; files that could not be
 * read are listed under {@code leftOut}.
 *
 * <p>A memory snapshot (gVisor, microVM) holds, beside the files, the sandbox's checkpoint image
 * ({@link dev.airlock.core.Sandbox#checkpoint}): each of its files is a blob too, named in the
 * manifest under {@code memory}, so it counts in the digest and against the quota, and is checked
 * as it is copied out for a restore. Elsewhere processes do not survive: a snapshot is of files.
 *
 * <p>Where the driver layers {@code /workspace} ({@link dev.airlock.core.IsolationDriver#layersWorkspace},
 * runc), a restore does not copy the snapshot's {@code /workspace} files into the sandbox: they are
 * laid out once per snapshot digest under {@code trees/} ({@link #workspaceTree}), checked as they
 * are, and every sandbox restored from the snapshot meanwhile shares that tree copy-on-write.
 *
 * <p>On a node of a cluster a restore may name another node's snapshot ({@link #forRestore}): its
 * record and manifest are asked of that node each time, its blobs fetched once into this store
 * ({@link Source}), each checked against its digest as it arrives, and kept as a mirror: never
 * listed, never given on, gone at the snapshot's expiry (docs/cluster.md, "Snapshots").
 */
public final class SnapshotStore {

    /** The directories a snapshot captures. */
    static final List<String> DIRS = List.of("/workspace", "/tmp");
    static final String WORKSPACE = "/workspace";
    /**
     * The system property that, when {@code true}, has every restore copy the files of {@code /workspace}
     * into the sandbox even where the driver could share them copy-on-write: for the benchmark that
     * compares the two ({@code airlock bench}, section snapshots), not a setting for operators.
     */
    public static final String COPY_WORKSPACE = "airlock.snapshot.copyWorkspace";
    static final int MAX_ENTRIES = 20_000;
    static final int MAX_FILES = 10_000;
    static final int MAX_DEPTH = 32;
    /** The most bytes one snapshot holds. */
    static final long MAX_BYTES = 2L << 30;
    /** How long capturing one snapshot may take. */
    static final Duration DEADLINE = Duration.ofSeconds(60);
    /** The most snapshots one client holds at once. */
    static final int MAX_SNAPSHOTS = 64;
    public static final Duration DEFAULT_TTL = Duration.ofHours(24);
    /** {@code snap-<hex>}, or on a node of a cluster {@code snap-<node>-<hex>}: any node finds a snapshot's node in its id. */
    private static final Pattern ID = Pattern.compile("snap-([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?-)?[0-9a-f]{16}");
    static final Pattern DIGEST = Pattern.compile("[0-9a-f]{64}");
    private static final String MANIFEST = "manifest.json";
    private static final String META = "snapshot.json";
    /** The marker of a mirror: another node's snapshot, pulled here for a restore. */
    private static final String MIRROR = "mirror";
    private static final Logger LOG = LoggerFactory.getLogger(SnapshotStore.class);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Path root;
    private final Path blobs;
    /** Snapshots' /workspace files as host trees, for drivers that layer /workspace on them ({@link #workspaceTree}). */
    private final WorkspaceTrees trees;

    /** The prefix of this store's snapshot ids: {@code snap-}, with the node's name after it on a node of a cluster. */
    private final String idPrefix;
    /** Where another node's snapshots come from; null on a server that runs alone. */
    private final Source source;

    /** Where a node of a cluster gets the snapshots other nodes hold (docs/cluster.md, "Snapshots"). */
    public interface Source {
        /** Whether {@code id} names a snapshot of another node. */
        boolean elsewhere(String id);

        /** Snapshot {@code id} of {@code owner} as the node that holds it has it: NOT_FOUND or GONE as that node says. */
        HeldSnapshot describe(String id, String owner);

        /** The content of blob {@code digest} of snapshot {@code id} of {@code owner}, from the node that holds it. */
        InputStream blob(String id, String owner, String digest) throws IOException;
    }

    /** Where sandboxes paused to disk keep their processes, one directory each, below the store's root. */
    private static final String PAUSED = "paused";

    /**
     * An empty directory, host root's alone, for the processes of {@code sandbox} paused to disk
     * ({@code <data>/snapshots/paused/<id>}); the driver removes it when the sandbox resumes or ends.
     */
    public Path pausedImage(String sandbox) {
        Path dir = root.resolve(PAUSED).resolve(sandbox);
        try {
            HostFiles.deleteTree(dir);
            Files.createDirectories(dir);
            return dir;
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot make " + dir + " to pause sandbox " + sandbox + " to disk: " + e.getMessage());
        }
    }

    public SnapshotStore(Path root) {
        this(root, null, null);
    }

    /**
     * The store in {@code root}; {@code node}: the name of this node of a cluster, put in every id it
     * gives, or null; {@code source}: where other nodes' snapshots come from, or null.
     */
    public SnapshotStore(Path root, String node, Source source) {
        this.idPrefix = node == null ? "snap-" : "snap-" + node + "-";
        this.source = source;
        this.root = root;
        this.blobs = root.resolve("blobs");
        try {
            Files.createDirectories(blobs);
            HostFiles.deleteTree(root.resolve("incoming")); // half-made snapshots of a server that died
            HostFiles.deleteTree(root.resolve(PAUSED)); // sandboxes paused to disk by a server that died: no sandbox outlives its server
            this.trees = new WorkspaceTrees(root.resolve("trees"), this);
            expire();
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot make the snapshot store " + root + ": " + e.getMessage());
        }
    }

    /**
     * Captures the files of the sandbox {@code sandbox} through its {@code agent} (never following a
     * link the sandbox made), within its owner's {@code quotaBytes}; when {@code checkpoint} is not
     * null, after the files, it is handed an empty directory to write the sandbox's checkpoint image
     * into (a memory snapshot), whose files are kept as blobs within the same quota. Synchronized:
     * captures run one at a time, so quotas are exact.
     */
    public synchronized SnapshotView capture(ManagedSandbox sandbox, SandboxAgent agent, Duration ttl, long quotaBytes,
                                             java.util.function.Consumer<Path> checkpoint) {
        String owner = sandbox.owner();
        expire();
        List<SnapshotView> held = list(owner);
        if (held.size() >= MAX_SNAPSHOTS) {
            throw new AirlockException(Kind.LIMIT_EXCEEDED, "client '" + owner + "' holds " + held.size()
                    + " snapshots, the most it may: delete some (DELETE /v1/snapshots/{id})");
        }
        String id = idPrefix + HexFormat.of().formatHex(randomBytes());
        Path incoming = root.resolve("incoming").resolve(id);
        SnapshotCapture c = new SnapshotCapture(this, sandbox.id(), owner, agent, incoming, held.stream().mapToLong(SnapshotView::bytes).sum(),
                quotaBytes);
        try {
            Files.createDirectories(incoming);
            for (String dir : DIRS) {
                c.files(dir);
            }
            if (checkpoint != null) {
                c.memory(checkpoint);
            }
            byte[] manifestBytes = c.manifest().getBytes(StandardCharsets.UTF_8);
            Instant now = Instant.now();
            SnapshotView s = new SnapshotView(id, owner, sandbox.id(), sandbox.profile().name(), sandbox.sandbox().spec().image(),
                    sandbox.sandbox().imageDigest(), "sha256:" + HexFormat.of().formatHex(sha256().digest(manifestBytes)), c.bytes(),
                    c.fileCount(), c.leftOut(), now, now.plus(ttl), checkpoint != null);
            Files.write(incoming.resolve(MANIFEST), manifestBytes);
            Files.writeString(incoming.resolve(META), JsonViews.snapshot(s).toString()); // read back by read()
            Files.move(incoming, root.resolve(id), StandardCopyOption.ATOMIC_MOVE);
            return s;
        } catch (IOException e) {
            throw new AirlockException(Kind.INTERNAL, "sandbox " + sandbox.id() + ": could not take a snapshot: " + e.getMessage(), e);
        } finally {
            HostFiles.deleteTree(incoming);
            collectBlobs();
        }
    }

    /** The snapshots {@code owner} holds (null: every client's), oldest first. */
    public synchronized List<SnapshotView> list(String owner) {
        expire();
        List<SnapshotView> all = new ArrayList<>();
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(root, "snap-*")) {
            for (Path dir : dirs) {
                SnapshotView s = read(dir);
                if (s != null && (owner == null || owner.equals(s.owner())) && !Files.exists(dir.resolve(MIRROR))) {
                    all.add(s);
                }
            }
        } catch (IOException e) {
            throw new AirlockException(Kind.INTERNAL, "cannot list the snapshots in " + root + ": " + e.getMessage(), e);
        }
        all.sort(Comparator.comparing(SnapshotView::createdAt));
        return all;
    }

    /** The snapshot {@code id} if {@code owner} holds it (null owner: anyone's); another client's is not found. */
    public synchronized SnapshotView get(String id, String owner) {
        SnapshotView s = id != null && ID.matcher(id).matches() ? read(root.resolve(id)) : null;
        if (s == null || (owner != null && !owner.equals(s.owner())) || !Instant.now().isBefore(s.expiresAt())) {
            throw new AirlockException(Kind.NOT_FOUND, "no snapshot '" + Json.printable(id) + "': list yours with GET /v1/snapshots");
        }
        return s;
    }

    /**
     * The snapshot a restore of {@code owner} names: this store's own; on a node of a cluster,
     * another node's, asked of that node (so one deleted or expired there is not restored here) and,
     * the first time, its blobs fetched into this store, each checked against its digest as it
     * arrives and the whole within {@link #MAX_BYTES}. A memory snapshot is not fetched: it is
     * restored on the node that holds it.
     */
    public SnapshotView forRestore(String id, String owner) {
        if (source == null || id == null || !source.elsewhere(id)) {
            return get(id, owner);
        }
        HeldSnapshot held = source.describe(id, owner);
        SnapshotView s = parse(held.record());
        if (s == null || !s.id().equals(id) || !s.owner().equals(owner)) {
            throw new AirlockException(Kind.INTERNAL, "the node that holds snapshot " + Json.printable(id) + " answered with another one");
        }
        if (!("sha256:" + HexFormat.of().formatHex(sha256().digest(held.manifest()))).equals(s.digest())) {
            throw new AirlockException(Kind.CONFLICT, "snapshot " + id + ": the manifest its node sent does not have the snapshot's digest "
                    + s.digest() + ": not restored here");
        }
        if (s.memory()) {
            throw new AirlockException(Kind.CONFLICT, "snapshot " + id + " keeps running processes (a gVisor memory snapshot): it is"
                    + " forked on the node that holds it, which cannot take it now (draining or full); try again once it can");
        }
        synchronized (this) {
            SnapshotView mirror = read(root.resolve(id));
            if (mirror != null && mirror.digest().equals(s.digest()) && Files.exists(root.resolve(id).resolve(MIRROR))) {
                return mirror;
            }
        }
        return pull(s, held);
    }

    /** Fetches the blobs of another node's snapshot {@code s} that this store lacks, checked, then keeps it as a mirror. */
    private SnapshotView pull(SnapshotView s, HeldSnapshot held) {
        Path incoming = root.resolve("incoming").resolve("pull-" + HexFormat.of().formatHex(randomBytes()));
        try {
            Files.createDirectories(incoming);
            JsonNode manifest = Json.MAPPER.readTree(held.manifest());
            Set<String> needed = new HashSet<>();
            long total = 0;
            for (String kind : List.of("files", "memory")) {
                for (JsonNode f : manifest.path(kind)) {
                    String digest = f.path("sha256").asString();
                    long size = f.path("size").asLong(-1);
                    if (!DIGEST.matcher(digest).matches() || size < 0) {
                        throw tampered(s, "its manifest names a blob " + Json.printable(digest, 80));
                    }
                    total += size;
                    if (total > MAX_BYTES) {
                        throw tampered(s, "its manifest holds more than " + MAX_BYTES + " bytes");
                    }
                    if (needed.add(digest) && !Files.exists(blobs.resolve(digest))) {
                        fetch(s, digest, size, incoming.resolve(digest));
                    }
                }
            }
            Files.write(incoming.resolve(MANIFEST), held.manifest());
            Files.write(incoming.resolve(META), held.record());
            Files.createFile(incoming.resolve(MIRROR));
            synchronized (this) {
                // blobs move in with the manifest that names them, under the lock the collection of unused blobs takes
                for (String digest : needed) {
                    Path part = incoming.resolve(digest);
                    if (Files.exists(part)) {
                        keepAsBlob(part, digest);
                    } else if (!Files.exists(blobs.resolve(digest))) {
                        throw AirlockException.unavailable("snapshot " + s.id() + ": a blob this node held was removed while the rest was"
                                + " fetched; try again");
                    }
                }
                HostFiles.deleteTree(root.resolve(s.id()));
                Files.move(incoming, root.resolve(s.id()), StandardCopyOption.ATOMIC_MOVE);
                return read(root.resolve(s.id()));
            }
        } catch (IOException e) {
            throw AirlockException.unavailable("snapshot " + s.id() + ": could not fetch its files from the node that holds it: " + e.getMessage());
        } finally {
            HostFiles.deleteTree(incoming);
        }
    }

    /** Fetches blob {@code digest} of {@code size} bytes into {@code part}, hashing it as it arrives: one that differs is refused. */
    private void fetch(SnapshotView s, String digest, long size, Path part) throws IOException {
        MessageDigest sha = sha256();
        long got;
        try (InputStream in = new DigestInputStream(source.blob(s.id(), s.owner(), digest), sha);
             OutputStream out = Files.newOutputStream(part)) {
            // at most one byte more than the manifest says: enough to tell a longer blob, never more
            got = in.transferTo(new java.io.FilterOutputStream(out) {
                private long left = size + 1;

                @Override
                public void write(int b) throws IOException {
                    write(new byte[] {(byte) b}, 0, 1);
                }

                @Override
                public void write(byte[] b, int off, int len) throws IOException {
                    if (len > left) {
                        throw new IOException("blob " + digest + " is longer than its " + size + " bytes");
                    }
                    left -= len;
                    out.write(b, off, len);
                }
            });
        }
        if (got != size || !HexFormat.of().formatHex(sha.digest()).equals(digest)) {
            throw new AirlockException(Kind.CONFLICT, "snapshot " + s.id() + ": the blob " + digest + " its node sent does not match its"
                    + " digest (" + got + " bytes for " + size + "): not restored here");
        }
    }

    /** Snapshot {@code id} of {@code owner} as another node of the cluster pulls it: its record and manifest (never a mirror). */
    public synchronized HeldSnapshot export(String id, String owner) {
        SnapshotView s = get(id, owner);
        Path dir = root.resolve(s.id());
        try {
            if (Files.exists(dir.resolve(MIRROR))) {
                throw new AirlockException(Kind.NOT_FOUND, "snapshot " + Json.printable(id) + " is not held by this node");
            }
            return new HeldSnapshot(Files.readAllBytes(dir.resolve(META)), Files.readAllBytes(dir.resolve(MANIFEST)));
        } catch (IOException e) {
            throw tampered(s, "it cannot be read: " + e.getMessage());
        }
    }

    /**
     * Writes blob {@code digest} of snapshot {@code id} of {@code owner} to {@code out} for another
     * node, checked as it is read; NOT_FOUND unless the snapshot's manifest names it.
     */
    public void exportBlob(String id, String owner, String digest, OutputStream out) throws IOException {
        SnapshotView s = get(id, owner);
        JsonNode manifest = verifiedManifest(s);
        boolean named = false;
        for (String kind : List.of("files", "memory")) {
            for (JsonNode f : manifest.path(kind)) {
                named |= f.path("sha256").asString().equals(digest);
            }
        }
        if (!named || !DIGEST.matcher(digest).matches()) {
            throw new AirlockException(Kind.NOT_FOUND, "snapshot " + s.id() + " holds no blob " + Json.printable(digest, 80));
        }
        readBlob(s, digest, "the blob " + digest, in -> in.transferTo(out));
    }

    public synchronized void delete(String id, String owner) {
        SnapshotView s = get(id, owner);
        HostFiles.deleteTree(root.resolve(s.id()));
        collectBlobs();
    }

    /**
     * Writes the snapshot's files into a new sandbox through its {@code agent}, checking first that
     * the manifest still has the snapshot's digest and, as each file is copied, that its content has
     * its blob's: a tampered snapshot is refused (CONFLICT) and the caller destroys the sandbox.
     * With {@code workspaceLayered} the sandbox's {@code /workspace} lies on the snapshot's tree
     * ({@link #workspaceTree}) and only the other files are written.
     */
    public void restore(SnapshotView s, SandboxAgent agent, boolean workspaceLayered) throws IOException {
        JsonNode manifest = verifiedManifest(s);
        Set<String> made = new HashSet<>();
        for (JsonNode f : manifest.path("files")) {
            String path = f.path("path").asString();
            String digest = f.path("sha256").asString();
            if (!DIGEST.matcher(digest).matches() || DIRS.stream().noneMatch(d -> path.startsWith(d + "/")) || path.contains("/../")) {
                throw tampered(s, "an entry names " + Json.printable(path));
            }
            if (workspaceLayered && path.startsWith(WORKSPACE + "/")) {
                continue; // in the sandbox already, from the snapshot's tree (workspaceTree)
            }
            String parent = path.substring(0, path.lastIndexOf('/'));
            if (made.add(parent)) {
                agent.mkdir(parent, true);
            }
            try {
                readBlob(s, digest, "the content of " + Json.printable(path),
                        in -> agent.writeFile(path, in, f.path("size").asLong(), f.path("mode").asInt() & 0777));
            } catch (SandboxAgent.FileTooLargeException e) {
                throw tampered(s, "the content of " + Json.printable(path) + " grew");
            } catch (SandboxAgent.FileOperationException e) {
                // the new sandbox's own limits (file size, disk) refused it
                throw AirlockException.invalid("snapshot " + s.id() + ": " + Json.printable(path) + " (" + f.path("size").asLong()
                        + " bytes) does not fit the new sandbox: " + Json.printable(e.getMessage())
                        + "; fork with larger limits (fileSize, disk, memory)");
            }
        }
    }

    /** The bound on {@link #verifiedBlobs}: past it the memory of hashes starts again (each blob is hashed once more). */
    private static final int MAX_VERIFIED_BLOBS = 4096;
    /** Checkpoint blobs whose content matched their digest: digest to the inode, size and modification time it had then. */
    private final Map<String, String> verifiedBlobs = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * Lays a memory snapshot's checkpoint image into the empty directory {@code into}, for {@link
     * dev.airlock.core.Engine#restore}, after checking the manifest against the snapshot's digest and
     * each part's content against its blob's digest: a tampered snapshot is refused (CONFLICT) and
     * nothing is restored from it. Each part is a hard link to its blob, not a copy (a guest's RAM is
     * hundreds of MiB; the drivers only read a checkpoint), so every restore of one snapshot reads the
     * same files, which a driver may share (the microVM driver maps one copy of the RAM into every
     * guest restored from it). A blob's content is hashed once for as long as its inode, size and
     * modification time stay the same ({@link #verifiedBlobs}; not its change time, which every hard
     * link changes): a write to it moves its modification time, so the next restore hashes it again.
     * Only host root can write a blob, and could set that time back; the hash guards against a blob
     * changed by accident or by a process that is not root, as the store's other checks do.
     */
    public void copyCheckpoint(SnapshotView s, Path into) throws IOException {
        JsonNode manifest = verifiedManifest(s);
        if (!manifest.path("memory").isArray() || manifest.path("memory").isEmpty()) {
            throw tampered(s, "its manifest names no checkpoint image");
        }
        for (JsonNode part : manifest.path("memory")) {
            String name = part.path("name").asString();
            String digest = part.path("sha256").asString();
            if (!DIGEST.matcher(digest).matches() || !name.matches("[A-Za-z0-9._-]{1,64}") || name.startsWith(".")) {
                throw tampered(s, "a checkpoint part names " + Json.printable(name));
            }
            Path blob = blobs.resolve(digest);
            String identity = identity(blob);
            if (identity == null) {
                throw tampered(s, "the checkpoint part " + name + " is missing");
            }
            if (!identity.equals(verifiedBlobs.get(digest))) {
                readBlob(s, digest, "the checkpoint part " + name, in -> in.transferTo(OutputStream.nullOutputStream()));
                if (verifiedBlobs.size() >= MAX_VERIFIED_BLOBS) {
                    verifiedBlobs.clear();
                }
                verifiedBlobs.put(digest, identity);
            }
            try {
                Files.createLink(into.resolve(name), blob);
            } catch (UnsupportedOperationException | java.nio.file.FileSystemException e) {
                readBlob(s, digest, "the checkpoint part " + name, in -> Files.copy(in, into.resolve(name)));
            }
        }
    }

    /** A blob's inode, size and modification time, or null when it is gone: what {@link #verifiedBlobs} keys a hash on. */
    private static String identity(Path blob) {
        try {
            Map<String, Object> a = Files.readAttributes(blob, "unix:ino,size,lastModifiedTime", java.nio.file.LinkOption.NOFOLLOW_LINKS);
            return a.get("ino") + ":" + a.get("size") + ":" + a.get("lastModifiedTime");
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * The snapshot's {@code /workspace} files as a host tree, for a sandbox whose driver layers
     * {@code /workspace} on it copy-on-write ({@link WorkspaceTrees}); the lease lets it go.
     */
    public WorkspaceTrees.TreeLease workspaceTree(SnapshotView s) {
        return trees.lease(s);
    }

    /** Writes the snapshot's files to {@code out} as a tar archive, once each was checked ({@link SnapshotArchive}). */
    public void writeArchive(SnapshotView s, OutputStream out) throws IOException {
        SnapshotArchive.write(this, s, out);
    }

    /** The blob of content {@code digest} (hex). */
    Path blob(String digest) {
        return blobs.resolve(digest);
    }

    /** What reads a blob's content as it is checked ({@link #readBlob}). */
    @FunctionalInterface
    interface BlobReader {
        void read(InputStream content) throws IOException;
    }

    /**
     * Gives {@code reader} the content of the blob {@code digest}, checking it against the digest as
     * it is read: a missing or changed blob ({@code what}, for the message) is a tampered snapshot
     * (CONFLICT). The one way a restore, a fork's tree, a checkpoint copy and an archive read blobs.
     */
    void readBlob(SnapshotView s, String digest, String what, BlobReader reader) throws IOException {
        MessageDigest sha = sha256();
        try (InputStream in = new DigestInputStream(Files.newInputStream(blobs.resolve(digest)), sha)) {
            reader.read(in);
        } catch (java.nio.file.NoSuchFileException | java.nio.file.InvalidPathException e) {
            throw tampered(s, what + " is missing");
        }
        if (!HexFormat.of().formatHex(sha.digest()).equals(digest)) {
            throw tampered(s, what + " changed");
        }
    }

    /** A directory for one restore's copy of a checkpoint image, removed with the store's half-made work. */
    public Path scratch() throws IOException {
        return Files.createDirectories(root.resolve("incoming").resolve("restore-" + HexFormat.of().formatHex(randomBytes())));
    }

    /** Moves {@code part}, whose SHA-256 is {@code digest}, into the blob store read-only; a blob already there is kept and the part dropped. */
    void keepAsBlob(Path part, String digest) throws IOException {
        Path blob = blobs.resolve(digest);
        if (Files.exists(blob)) {
            Files.delete(part);
        } else {
            Files.move(part, blob, StandardCopyOption.ATOMIC_MOVE);
            blob.toFile().setReadOnly();
        }
    }

    static String digestOf(Path file) throws IOException {
        MessageDigest sha = sha256();
        try (InputStream in = new DigestInputStream(Files.newInputStream(file), sha)) {
            in.transferTo(OutputStream.nullOutputStream());
        }
        return HexFormat.of().formatHex(sha.digest());
    }

    JsonNode verifiedManifest(SnapshotView s) {
        try {
            byte[] bytes = Files.readAllBytes(root.resolve(s.id()).resolve(MANIFEST));
            if (!("sha256:" + HexFormat.of().formatHex(sha256().digest(bytes))).equals(s.digest())) {
                throw tampered(s, "its manifest changed");
            }
            return Json.MAPPER.readTree(bytes);
        } catch (IOException e) {
            throw tampered(s, "its manifest cannot be read: " + e.getMessage());
        }
    }

    static AirlockException tampered(SnapshotView s, String what) {
        return new AirlockException(Kind.CONFLICT, "snapshot " + s.id() + " (" + s.digest() + ") was altered on the host and is"
                + " not restored: " + what + "; delete it and take a new one");
    }

    /** Removes the snapshots whose TTL ran out. */
    private void expire() {
        Instant now = Instant.now();
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(root, "snap-*")) {
            boolean removed = false;
            for (Path dir : dirs) {
                SnapshotView s = read(dir);
                if (s == null || !now.isBefore(s.expiresAt())) {
                    HostFiles.deleteTree(dir);
                    removed = true;
                }
            }
            if (removed) {
                collectBlobs();
            }
        } catch (IOException e) {
            LOG.warn("cannot expire snapshots in {}: {}", root, e.getMessage());
        }
    }

    /** Deletes the blobs no snapshot's manifest names. */
    private void collectBlobs() {
        Set<String> named = new HashSet<>();
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(root, "snap-*")) {
            for (Path dir : dirs) {
                JsonNode manifest = Json.MAPPER.readTree(Files.readAllBytes(dir.resolve(MANIFEST)));
                for (String kind : List.of("files", "memory")) { // a memory snapshot's checkpoint parts are blobs too
                    for (JsonNode f : manifest.path(kind)) {
                        named.add(f.path("sha256").asString());
                    }
                }
            }
            try (DirectoryStream<Path> all = Files.newDirectoryStream(blobs)) {
                for (Path blob : all) {
                    if (!named.contains(blob.getFileName().toString())) {
                        Files.deleteIfExists(blob);
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("cannot collect unused snapshot blobs in {}: {}", blobs, e.getMessage());
        }
    }

    private static SnapshotView read(Path dir) {
        try {
            return parse(Files.readAllBytes(dir.resolve(META)));
        } catch (IOException e) {
            return null;
        }
    }

    /** A snapshot's record ({@code snapshot.json}); null when it is not one. */
    private static SnapshotView parse(byte[] record) {
        try {
            JsonNode n = Json.MAPPER.readTree(record);
            List<String> left = new ArrayList<>();
            n.path("leftOut").forEach(l -> left.add(l.asString()));
            return new SnapshotView(n.path("id").asString(), n.path("owner").asString(), n.path("sandbox").asString(),
                    n.path("profile").asString(), n.path("image").asString(), n.path("imageDigest").isNull() ? null
                    : n.path("imageDigest").asString(), n.path("digest").asString(), n.path("bytes").asLong(), n.path("files").asInt(),
                    left, Instant.parse(n.path("createdAt").asString()), Instant.parse(n.path("expiresAt").asString()),
                    n.path("memory").asBoolean(false));
        } catch (RuntimeException e) {
            return null;
        }
    }

    static byte[] randomBytes() {
        byte[] b = new byte[8];
        RANDOM.nextBytes(b);
        return b;
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
