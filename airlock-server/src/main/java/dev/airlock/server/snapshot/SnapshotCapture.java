package dev.airlock.server.snapshot;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.SandboxAgent;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.server.output.CountingOutputStream;
import dev.airlock.server.wire.Json;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.function.Consumer;

/**
 * One capture of a sandbox for {@link SnapshotStore#capture}: its files, read through its agent
 * (never following a link the sandbox made), and for a memory snapshot its checkpoint image, each
 * kept as a blob of the store and listed in the manifest; within a byte budget and {@link
 * SnapshotStore#DEADLINE}. What could not be kept is listed in {@link #leftOut()}.
 */
final class SnapshotCapture {

    private static final SandboxAgent.TreeBounds BOUNDS = new SandboxAgent.TreeBounds(SnapshotStore.MAX_ENTRIES, SnapshotStore.MAX_DEPTH,
            SnapshotStore.MAX_FILES);

    private final SnapshotStore store;
    private final String sandbox;
    private final String owner;
    private final SandboxAgent agent;
    private final Path incoming;
    /** What the owner's snapshots hold already, and may hold. */
    private final long used;
    private final long quotaBytes;
    private final long budget;
    private final long deadline = System.nanoTime() + SnapshotStore.DEADLINE.toNanos();
    private final ObjectNode manifest = Json.object();
    private final ArrayNode entries = manifest.putArray("files");
    private final List<String> leftOut = new ArrayList<>();
    private long total;

    /**
     * A capture of {@code sandbox} into {@code incoming}, within what is left of its {@code owner}'s
     * {@code quotaBytes} ({@code used} are used) and at most {@link SnapshotStore#MAX_BYTES}.
     */
    SnapshotCapture(SnapshotStore store, String sandbox, String owner, SandboxAgent agent, Path incoming, long used, long quotaBytes) {
        this.store = store;
        this.sandbox = sandbox;
        this.owner = owner;
        this.agent = agent;
        this.incoming = incoming;
        this.used = used;
        this.quotaBytes = quotaBytes;
        this.budget = Math.min(SnapshotStore.MAX_BYTES, quotaBytes - used);
    }

    /** Keeps the regular files under {@code dir}, in path order; a directory the agent cannot walk is left out. */
    void files(String dir) throws IOException {
        SandboxAgent.Tree tree;
        try {
            tree = agent.walk(dir, BOUNDS);
        } catch (SandboxAgent.FileOperationException e) {
            leftOut.add(dir + ": " + e.getMessage());
            return;
        }
        if (tree.entriesCut() || tree.directoriesNotEntered() > 0 || tree.filesLeftOut() > 0) {
            throw new AirlockException(Kind.LIMIT_EXCEEDED, "sandbox " + sandbox + ": " + dir + " holds more than a snapshot keeps ("
                    + SnapshotStore.MAX_ENTRIES + " entries, " + SnapshotStore.MAX_FILES + " files, " + SnapshotStore.MAX_DEPTH
                    + " levels): remove files first");
        }
        List<FileInfo> files = new ArrayList<>(tree.files());
        files.sort(Comparator.comparing(FileInfo::path));
        for (FileInfo f : files) {
            if (System.nanoTime() > deadline) {
                throw new AirlockException(Kind.LIMIT_EXCEEDED, "sandbox " + sandbox + ": the snapshot took over "
                        + SnapshotStore.DEADLINE.toSeconds() + " s: snapshot fewer or smaller files");
            }
            if (f.path().indexOf('\n') >= 0 || !f.path().startsWith(dir + "/")) {
                leftOut.add(Json.printable(f.path()) + ": name not kept");
                continue;
            }
            Path part = incoming.resolve("part");
            MessageDigest sha = SnapshotStore.sha256();
            CountingOutputStream counted;
            try (OutputStream out = new DigestOutputStream(Files.newOutputStream(part), sha)) {
                counted = new CountingOutputStream(out);
                agent.readFileNoFollow(f.path(), Math.max(0, budget - total), counted);
            } catch (SandboxAgent.FileTooLargeException e) {
                throw overQuota();
            } catch (SandboxAgent.FileOperationException e) {
                leftOut.add(Json.printable(f.path()) + ": " + Json.printable(e.getMessage()));
                continue;
            }
            total += counted.count;
            String digest = HexFormat.of().formatHex(sha.digest());
            store.keepAsBlob(part, digest);
            entries.addObject().put("path", f.path()).put("mode", f.mode() & 07777 & ~06000).put("size", counted.count)
                    .put("sha256", digest);
        }
    }

    /** Hands {@code checkpoint} an empty directory to write the sandbox's checkpoint image into, and keeps the image's files. */
    void memory(Consumer<Path> checkpoint) throws IOException {
        Path image = Files.createDirectories(incoming.resolve("checkpoint"));
        checkpoint.accept(image);
        ArrayNode memory = manifest.putArray("memory");
        List<Path> parts;
        try (var listed = Files.list(image)) {
            parts = listed.sorted().toList();
        }
        for (Path part : parts) {
            long size = Files.size(part);
            if (!Files.isRegularFile(part, LinkOption.NOFOLLOW_LINKS) || size > budget - total) {
                throw overQuota();
            }
            total += size;
            String digest = SnapshotStore.digestOf(part);
            store.keepAsBlob(part, digest);
            memory.addObject().put("name", part.getFileName().toString()).put("size", size).put("sha256", digest);
        }
    }

    private AirlockException overQuota() {
        return new AirlockException(Kind.LIMIT_EXCEEDED, "sandbox " + sandbox + ": its files are larger than "
                + (budget == SnapshotStore.MAX_BYTES ? "a snapshot holds (" + (SnapshotStore.MAX_BYTES >> 20) + " MiB)"
                : "what is left of client '" + owner + "''s snapshot quota (" + (quotaBytes >> 20) + " MiB, " + (used >> 20)
                + " MiB used; policy: clients." + owner + ".quotas.snapshotMiB)") + ": delete snapshots or files first");
    }

    /** The manifest as it is kept. */
    String manifest() {
        return manifest.toString();
    }

    /** The bytes kept. */
    long bytes() {
        return total;
    }

    /** The files kept. */
    int fileCount() {
        return entries.size();
    }

    /** What was not kept, and why. */
    List<String> leftOut() {
        return leftOut;
    }
}
