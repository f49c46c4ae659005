package dev.airlock.server.output;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.HostFiles;
import dev.airlock.core.SandboxAgent;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.server.wire.Json;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Outputs: what a sandbox's code left in {@value #DIR}, collected into Airlock's data directory
 * ({@code <data>/outputs/<sandbox>/}) when the sandbox ends, within its profile's byte cap, and
 * kept for {@link #RETENTION} for its owner to download. Names come from the sandbox, so each is
 * checked before it becomes a host path; the tree is walked and read by the agent inside the
 * sandbox, never following a link the sandbox made, at any step.
 *
 * <p>Collection is bounded whatever the sandbox left: at most {@link #MAX_ENTRIES} entries of any
 * kind are looked at, {@link #MAX_DEPTH} levels, {@link #MAX_FILES} files, the profile's bytes, and
 * all of it within {@link #DEADLINE}, after which the agent's channel is closed. The caller stops
 * the sandbox's processes first, so nothing changes the tree under the walk.
 */
public final class OutputStore {

    public static final String DIR = "/workspace/output";
    static final Duration RETENTION = Duration.ofHours(24);
    /** Entries (files, directories, links, others) the walk of {@value #DIR} looks at. */
    static final int MAX_ENTRIES = 10_000;
    /** Directory levels below {@value #DIR} the walk enters. */
    static final int MAX_DEPTH = 32;
    /** Regular files considered for collection. */
    static final int MAX_FILES = 1000;
    /** How long one sandbox's collection may take, walk and reads together. */
    static final Duration DEADLINE = Duration.ofSeconds(10);
    private static final SandboxAgent.TreeBounds BOUNDS = new SandboxAgent.TreeBounds(MAX_ENTRIES, MAX_DEPTH, MAX_FILES);
    private static final String MANIFEST = "manifest.json";
    private static final Pattern SAFE_NAME = Pattern.compile("[^/\\x00-\\x1f]{1,255}");
    private static final Pattern ID = Pattern.compile("al-[a-z0-9-]{1,64}");
    private static final Logger LOG = LoggerFactory.getLogger(OutputStore.class);

    private final Path root;

    public OutputStore(Path root) {
        this.root = root;
    }

    /**
     * Copies the sandbox's outputs (if it left any) to the host, up to {@code maxBytes} in all;
     * files beyond the cap are listed as skipped, and the bounds that cut the collection under
     * {@code cut}. Returns the manifest, or null when there was nothing to collect.
     */
    public ObjectNode collect(String sandboxId, String owner, String profile, SandboxAgent agent, long maxBytes) {
        if (maxBytes <= 0) {
            return null;
        }
        try (CollectionDeadline deadline = CollectionDeadline.closing(agent, DEADLINE)) {
            SandboxAgent.Tree tree;
            try {
                tree = agent.walk(DIR, BOUNDS);
            } catch (IOException e) {
                if (!deadline.passed()) {
                    // no output folder, a link instead of one, or the sandbox can no longer answer
                    LOG.info("outputs of sandbox {} not collected: {}", sandboxId, e.getMessage());
                    return null;
                }
                // Said in a manifest, so that the owner learns why nothing was kept (a slow tier such as gVisor walks ~1 ms an entry).
                LOG.warn("outputs of sandbox {} not collected: the walk took over {} s", sandboxId, DEADLINE.toSeconds());
                return store(sandboxId, owner, profile, agent, maxBytes, new SandboxAgent.Tree(List.of(), 0, false, 0, 0),
                        List.of("deadline: the walk of " + DIR + " took over " + DEADLINE.toSeconds() + " s; nothing was collected"), deadline);
            }
            List<String> cut = cuts(tree);
            if (tree.files().isEmpty() && cut.isEmpty()) {
                return null;
            }
            if (!cut.isEmpty()) {
                LOG.info("outputs of sandbox {} cut at their bounds: {}", sandboxId, String.join("; ", cut));
            }
            return store(sandboxId, owner, profile, agent, maxBytes, tree, cut, deadline);
        }
    }

    private static List<String> cuts(SandboxAgent.Tree tree) {
        List<String> cut = new ArrayList<>();
        if (tree.entriesCut()) {
            cut.add("entries: the walk stopped at " + MAX_ENTRIES + " entries (files, directories and links)");
        }
        if (tree.directoriesNotEntered() > 0) {
            cut.add("depth: " + tree.directoriesNotEntered() + " directories " + MAX_DEPTH + " levels deep were not entered");
        }
        if (tree.filesLeftOut() > 0) {
            cut.add("files: " + tree.filesLeftOut() + " files beyond the first " + MAX_FILES + " were not considered");
        }
        return cut;
    }

    private ObjectNode store(String sandboxId, String owner, String profile, SandboxAgent agent, long maxBytes, SandboxAgent.Tree tree,
                             List<String> cut, CollectionDeadline deadline) {
        List<FileInfo> files = new ArrayList<>(tree.files());
        files.sort(Comparator.comparing(FileInfo::path));
        Path dir = root.resolve(sandboxId);
        ObjectNode manifest = Json.object();
        manifest.put("sandbox", sandboxId);
        manifest.put("owner", owner);
        manifest.put("profile", profile);
        manifest.put("collectedAt", Instant.now().toString());
        manifest.put("maxBytes", maxBytes);
        manifest.put("entries", tree.entries());
        ArrayNode cuts = manifest.putArray("cut");
        cut.forEach(cuts::add);
        ArrayNode kept = manifest.putArray("files");
        ArrayNode skipped = manifest.putArray("skipped");
        long total = 0;
        try {
            Files.createDirectories(dir);
            for (FileInfo f : files) {
                String relative = relative(f.path());
                if (relative == null) {
                    skipped.addObject().put("path", Json.printable(f.path())).put("reason", "name not allowed");
                    continue;
                }
                if (deadline.passed()) {
                    skipped.addObject().put("path", relative).put("reason", "the collection deadline of " + DEADLINE.toSeconds() + " s passed");
                    continue;
                }
                if (total + f.size() > maxBytes) {
                    skipped.addObject().put("path", relative).put("size", f.size()).put("reason", "over the profile's output cap");
                    continue;
                }
                Path target = dir.resolve(relative).normalize();
                if (!target.startsWith(dir)) {
                    skipped.addObject().put("path", Json.printable(relative)).put("reason", "name not allowed");
                    continue;
                }
                Files.createDirectories(target.getParent());
                long written;
                try (OutputStream out = Files.newOutputStream(target, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                        LinkOption.NOFOLLOW_LINKS)) {
                    CountingOutputStream sink = new CountingOutputStream(out);
                    // the file may have grown since it was listed: read no more than is left of the cap
                    agent.readFileNoFollow(f.path(), maxBytes - total, sink);
                    written = sink.count;
                } catch (IOException e) {
                    Files.deleteIfExists(target);
                    skipped.addObject().put("path", relative).put("reason", "could not be read: " + Json.printable(e.getMessage()));
                    continue;
                }
                total += written;
                kept.addObject().put("path", relative).put("size", written);
            }
            if (deadline.passed() && cut.stream().noneMatch(c -> c.startsWith("deadline:"))) {
                cuts.add("deadline: the collection took over " + DEADLINE.toSeconds() + " s");
            }
            manifest.put("bytes", total);
            Files.writeString(dir.resolve(MANIFEST), manifest.toString());
            return manifest;
        } catch (IOException e) {
            LOG.warn("could not store the outputs of sandbox {}: {}", sandboxId, e.getMessage());
            HostFiles.deleteTree(dir);
            return null;
        }
    }

    /** {@code /workspace/output/a/b.txt} as {@code a/b.txt}, or null when a part is not a plain name. */
    private static String relative(String sandboxPath) {
        if (!sandboxPath.startsWith(DIR + "/")) {
            return null;
        }
        String rel = sandboxPath.substring(DIR.length() + 1);
        for (String part : rel.split("/", -1)) {
            if (!SAFE_NAME.matcher(part).matches() || part.equals(".") || part.equals("..") || part.equals(MANIFEST)) {
                return null;
            }
        }
        return rel;
    }

    /** The manifests of {@code owner}'s collected outputs (all owners when null), newest first. */
    public List<JsonNode> list(String owner) {
        List<JsonNode> out = new ArrayList<>();
        if (!Files.isDirectory(root)) {
            return out;
        }
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(root)) {
            for (Path d : dirs) {
                JsonNode m = readManifest(d);
                if (m != null && (owner == null || owner.equals(m.path("owner").asString()))) {
                    out.add(m);
                }
            }
        } catch (IOException e) {
            throw new AirlockException(Kind.INTERNAL, "cannot list outputs: " + e.getMessage());
        }
        out.sort(Comparator.comparing((JsonNode m) -> m.path("collectedAt").asString()).reversed());
        return out;
    }

    /** The manifest of a sandbox's outputs, if {@code owner} (null: anyone) owns them. */
    public JsonNode get(String sandboxId, String owner) {
        JsonNode m = ID.matcher(sandboxId).matches() ? readManifest(root.resolve(sandboxId)) : null;
        if (m == null || (owner != null && !owner.equals(m.path("owner").asString()))) {
            throw new AirlockException(Kind.NOT_FOUND, "no outputs of sandbox " + Json.printable(sandboxId) + " are kept: outputs are what"
                    + " a sandbox left in " + DIR + " when it ended, kept " + RETENTION.toHours() + " h; list them with GET /v1/outputs");
        }
        return m;
    }

    /** Streams one collected file; {@code path} must be listed in the manifest. */
    public void read(String sandboxId, String owner, String path, OutputStream sink) throws IOException {
        JsonNode m = get(sandboxId, owner);
        boolean listed = m.path("files").valueStream().anyMatch(f -> f.path("path").asString().equals(path));
        if (!listed) {
            throw new AirlockException(Kind.NOT_FOUND, "sandbox " + sandboxId + " left no output '" + Json.printable(path)
                    + "': see the files of GET /v1/outputs/" + sandboxId);
        }
        try (InputStream in = Files.newInputStream(root.resolve(sandboxId).resolve(path), LinkOption.NOFOLLOW_LINKS)) {
            in.transferTo(sink);
        }
    }

    public void delete(String sandboxId, String owner) {
        get(sandboxId, owner);
        HostFiles.deleteTree(root.resolve(sandboxId));
    }

    /** Deletes outputs collected longer ago than {@link #RETENTION}. */
    public void sweep() {
        Instant cutoff = Instant.now().minus(RETENTION);
        for (JsonNode m : list(null)) {
            if (Instant.parse(m.path("collectedAt").asString()).isBefore(cutoff)) {
                HostFiles.deleteTree(root.resolve(m.path("sandbox").asString()));
            }
        }
    }

    private static JsonNode readManifest(Path dir) {
        try {
            return Json.MAPPER.readTree(Files.readString(dir.resolve(MANIFEST)));
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
