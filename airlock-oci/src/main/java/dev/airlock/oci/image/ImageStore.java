package dev.airlock.oci.image;

import dev.airlock.core.ImageInfo;
import dev.airlock.core.AirlockException;
import dev.airlock.core.HostFiles;
import dev.airlock.core.Printable;
import dev.airlock.core.SandboxSpec;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * Sandbox images on this host: read-only root directories named by the digest of their files
 * ({@link TreeDigest}), and an index from names to digests. Images come from an archive ({@link
 * #importArchive}) or from a tar stream of a root file system ({@link #add}, what {@code airlock
 * image build} makes with mmdebstrap); either way through {@link LayerApplier}, which neutralises
 * what could escape the root or give privilege, and {@link ImageSkeleton}, which adds what every
 * sandbox needs.
 *
 * <p>Layout under the root (default {@value #DEFAULT_ROOT}), all owned by the host's root:
 * <pre>
 *   index.json            names: {"images": {NAME: {"digest", "created", "source"}}}
 *   roots/HEX/            an image's files (HEX: its digest's hex), shared read-only by its sandboxes
 *   roots/HEX.json        their size and count
 *   disks/HEX.squashfs    the tree as a read-only disk, for microVM guests: made at first use, removed with the tree
 *   locks/HEX.lock        held shared by every process with a sandbox of it; rm takes it exclusively
 *   tmp/                  imports under way
 *   store.lock            held while the index changes
 * </pre>
 * The directories are mode 0711: a sandbox's runtime passes them as a host id of its own.
 * Identical trees are stored once; a tree no name refers to and no sandbox uses is removed. The
 * leases of this process's sandboxes are {@link ImageLeases}.
 */
public final class ImageStore {

    public static final String DEFAULT_ROOT = "/var/lib/airlock/images";
    private static final Pattern HEX = Pattern.compile("[0-9a-f]{64}");
    /** The directory of the trees' disks ({@link #diskOf}). */
    private static final String DISKS = "disks";
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final Path root;
    private final ImageLimits limits;

    private ImageStore(Path root, ImageLimits limits) {
        this.root = root.toAbsolutePath().normalize();
        this.limits = limits;
    }

    /** The store at {@code root}; nothing is created before the first image is added. */
    public static ImageStore at(Path root) {
        return at(root, ImageLimits.DEFAULTS);
    }

    public static ImageStore at(Path root, ImageLimits limits) {
        return new ImageStore(root, limits);
    }

    public Path root() {
        return root;
    }

    /** Refuses a name that is not 1 to 63 of a-z, 0-9, '.', '_', '-' (starting with a letter or digit), or is 'system'. */
    public static String checkName(String name) {
        SandboxSpec.checkImageName(name);
        if (name.equals(SandboxSpec.SYSTEM_IMAGE)) {
            throw AirlockException.invalid("the image name 'system' is the host's own image: choose another name");
        }
        return name;
    }

    /**
     * Imports an OCI image layout (directory or tar) or a {@code docker save} tar as {@code name},
     * replacing an image of that name.
     */
    public ImageInfo importArchive(Path archive, String name) {
        checkName(name);
        return stage(name, archive.toAbsolutePath().toString(), (rootfs, scratch) -> {
            LayerApplier applier = new LayerApplier(rootfs, limits);
            for (ImageArchive.Layer layer : ImageArchive.layers(archive, scratch, limits)) {
                try (InputStream in = ImageArchive.open(layer)) {
                    applier.apply(in);
                }
            }
        });
    }

    /** Adds the root file system {@code tar} (one uncompressed tar stream) as {@code name}. */
    public ImageInfo add(String name, InputStream tar, String source) {
        return add(name, source, tar);
    }

    /** Adds the root file system of {@code layers} (uncompressed tar streams, applied in order) as {@code name}. */
    public ImageInfo add(String name, String source, InputStream... layers) {
        checkName(name);
        return stage(name, source, (rootfs, scratch) -> {
            LayerApplier applier = new LayerApplier(rootfs, limits);
            for (InputStream layer : layers) {
                applier.apply(layer);
            }
        });
    }

    private interface Filler {
        void fill(Path rootfs, Path scratch) throws IOException;
    }

    private ImageInfo stage(String name, String source, Filler filler) {
        Path staging = null;
        try {
            createTraversable(root);
            createTraversable(root.resolve("roots"));
            createTraversable(root.resolve("locks"));
            Files.createDirectories(root.resolve("tmp"));
            staging = root.resolve("tmp").resolve(UUID.randomUUID().toString());
            Files.createDirectory(staging);
            Path rootfs = staging.resolve("rootfs");
            Files.createDirectory(rootfs);
            Files.setAttribute(rootfs, "unix:mode", 0755);
            Files.createDirectory(staging.resolve("archive"));
            filler.fill(rootfs, staging.resolve("archive"));
            ImageSkeleton.apply(rootfs);
            TreeDigest tree = TreeDigest.of(rootfs);
            String hex = tree.digest().substring("sha256:".length());
            Instant created = Instant.now();
            final Path staged = staging;
            return locked(() -> {
                Path target = root.resolve("roots").resolve(hex);
                if (!Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
                    Files.move(staged.resolve("rootfs"), target, StandardCopyOption.ATOMIC_MOVE);
                    ObjectNode meta = JSON.createObjectNode().put("sizeBytes", tree.sizeBytes()).put("files", tree.files());
                    Files.write(root.resolve("roots").resolve(hex + ".json"), JSON.writeValueAsBytes(meta));
                }
                ObjectNode index = readIndex();
                ((ObjectNode) index.get("images")).putObject(name).put("digest", tree.digest())
                        .put("created", created.toString()).put("source", source);
                writeIndex(index);
                collectGarbage(index, null);
                return new ImageInfo(name, tree.digest(), tree.sizeBytes(), tree.files(), created, source);
            });
        } catch (IOException e) {
            throw AirlockException.internal("cannot add image '" + name + "' under " + root + ": " + e.getMessage(), e);
        } finally {
            if (staging != null) {
                HostFiles.deleteTree(staging);
            }
        }
    }

    /** Every image, by name. */
    public List<ImageInfo> list() {
        List<ImageInfo> images = new ArrayList<>();
        JsonNode index = readIndexQuietly();
        for (String name : index.path("images").propertyNames()) {
            images.add(info(name, index.path("images").get(name)));
        }
        images.sort((a, b) -> a.name().compareTo(b.name()));
        return images;
    }

    /** The image named {@code name}. */
    public ImageInfo inspect(String name) {
        JsonNode entry = readIndexQuietly().path("images").get(name);
        if (entry == null) {
            throw notFound(name);
        }
        return info(name, entry);
    }

    private ImageInfo info(String name, JsonNode entry) {
        String digest = entry.path("digest").asString();
        JsonNode meta;
        try {
            meta = JSON.readTree(Files.readAllBytes(root.resolve("roots").resolve(hexOf(digest) + ".json")));
        } catch (IOException | RuntimeException e) {
            meta = JSON.createObjectNode();
        }
        return new ImageInfo(name, digest, meta.path("sizeBytes").asLong(), meta.path("files").asLong(),
                Instant.parse(entry.path("created").asString()), entry.path("source").asString());
    }

    /**
     * Removes the name {@code name}, and its files unless another name has them.
     *
     * @throws AirlockException CONFLICT while a sandbox (of any process) uses the image
     */
    public void remove(String name) {
        inspect(name); // an unknown name (or a store not made yet) is NOT_FOUND before any lock
        try {
            // the store's lock first, then this process's uses: the order stage() takes them in too
            locked(() -> {
                ObjectNode index = readIndex();
                JsonNode entry = index.get("images").get(name);
                if (entry == null) {
                    throw notFound(name);
                }
                String hex = hexOf(entry.path("digest").asString());
                Path lockFile = root.resolve("locks").resolve(hex + ".lock");
                return ImageLeases.whileNoneTaken(lockFile, leases -> {
                    if (leases > 0) {
                        throw inUse(name, leases + " sandbox(es) of this process use it");
                    }
                    try (FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.READ,
                            StandardOpenOption.WRITE)) {
                        // held while the files go: a sandbox starting now finds the image being removed
                        if (channel.tryLock(0, 1, false) == null) {
                            throw inUse(name, "a sandbox of another process (an airlock server, say) uses it");
                        }
                        ((ObjectNode) index.get("images")).remove(name);
                        writeIndex(index);
                        collectGarbage(index, hex);
                    }
                    return null;
                });
            });
        } catch (IOException e) {
            throw AirlockException.internal("cannot remove image '" + name + "': " + e.getMessage(), e);
        }
    }

    private static AirlockException inUse(String name, String why) {
        return new AirlockException(AirlockException.Kind.CONFLICT, "image '" + name + "' is in use: " + why
                + "; destroy its sandboxes first");
    }

    /** The root directory of the image {@code name} (to check it; {@link #use} holds it for a sandbox). */
    public Path rootOf(String name) {
        return root.resolve("roots").resolve(hexOf(inspect(name).digest()));
    }

    /** Whether {@code program} is an executable of the image rooted at {@code rootfs}, on the sandbox's PATH. */
    public static boolean hasExecutable(Path rootfs, String program) {
        for (String dir : List.of("usr/bin", "bin", "usr/sbin", "sbin")) {
            if (ImageTree.isExecutable(rootfs, dir + "/" + program)) {
                return true;
            }
        }
        return false;
    }

    /** {@link #rootOf} for a sandbox's request: an unknown name is the request's mistake (INVALID), not a missing sandbox. */
    public Path requestedRoot(String name) {
        return requested(() -> rootOf(name));
    }

    /**
     * Refuses a sandbox's request for the image {@code name} (INVALID when unknown) when one of
     * {@code programs} is not an executable of it (UNAVAILABLE, naming the program and what to do).
     */
    public void requireExecutables(String name, List<String> programs) {
        Path rootfs = requestedRoot(name);
        for (String program : programs) {
            if (!hasExecutable(rootfs, program)) {
                throw AirlockException.unavailable("the image '" + name + "' has no '" + program
                        + "': build it with the package that has it (airlock image build), or choose another language");
            }
        }
    }

    /** {@link #use} for a sandbox's request: an unknown name is the request's mistake (INVALID), not a missing sandbox. */
    public Lease useRequested(String name) {
        return requested(() -> use(name));
    }

    private static <T> T requested(java.util.function.Supplier<T> lookup) {
        try {
            return lookup.get();
        } catch (AirlockException e) {
            if (e.kind() == AirlockException.Kind.NOT_FOUND) {
                throw AirlockException.invalid(e.getMessage());
            }
            throw e;
        }
    }

    /** An image held for one sandbox: its files are not removed before {@link #close()}. */
    public interface Lease extends AutoCloseable {
        String name();

        String digest();

        /** The image's root directory, to be mounted read-only. */
        Path rootfs();

        /** What the image sets in every process's environment ({@link ImageRecipe#readEnvironment}). */
        Map<String, String> environment();

        @Override
        void close();
    }

    /**
     * Holds the image named {@code name} for a sandbox. Every sandbox of it shares the one root
     * directory; none may write it.
     */
    public Lease use(String name) {
        String digest = inspect(name).digest();
        String hex = hexOf(digest);
        Path rootfs = root.resolve("roots").resolve(hex);
        return ImageLeases.hold(name, digest, rootfs, root.resolve("locks").resolve(hex + ".lock"), () -> notFound(name));
    }

    /**
     * Removes every tree no name refers to and no process holds.
     *
     * @param heldHex a tree whose lock the caller holds exclusively already (null: none)
     */
    private void collectGarbage(JsonNode index, String heldHex) throws IOException {
        Set<String> named = new HashSet<>();
        index.path("images").forEach(e -> named.add(hexOf(e.path("digest").asString())));
        List<Path> roots = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(root.resolve("roots"))) {
            stream.forEach(roots::add);
        }
        for (Path p : roots) {
            String hex = p.getFileName().toString();
            if (!HEX.matcher(hex).matches() || named.contains(hex)) {
                continue;
            }
            Path lockFile = root.resolve("locks").resolve(hex + ".lock");
            if (hex.equals(heldHex)) {
                removeTree(hex);
                continue;
            }
            ImageLeases.whileNoneTaken(lockFile, leases -> {
                if (leases > 0) {
                    return null;
                }
                try (FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                    if (channel.tryLock(0, 1, false) == null) {
                        return null; // still in use by another process: a later change collects it
                    }
                    removeTree(hex);
                } catch (OverlappingFileLockException e) {
                    // held by this process through another channel: in use
                }
                return null;
            });
        }
    }

    /** Removes a tree, its description, its disk (a microVM's form of it: {@link #diskOf}) and its lock file. */
    private void removeTree(String hex) throws IOException {
        Files.deleteIfExists(root.resolve("roots").resolve(hex + ".json"));
        HostFiles.deleteTree(root.resolve("roots").resolve(hex));
        Files.deleteIfExists(root.resolve(DISKS).resolve(hex + ".squashfs"));
        Files.deleteIfExists(root.resolve("locks").resolve(hex + ".lock"));
    }

    /**
     * Where the read-only disk made from the tree of {@code digest} lives (the microVM driver makes it
     * with mksquashfs when a guest first needs it): beside the tree, and removed with it.
     */
    public Path diskOf(String digest) {
        return root.resolve(DISKS).resolve(hexOf(digest) + ".squashfs");
    }

    private interface Locked<T> {
        T run() throws IOException;
    }

    /** Runs {@code action} holding the store's lock, against other processes and this one's threads. */
    private <T> T locked(Locked<T> action) throws IOException {
        synchronized (ImageStore.class) {
            try (FileChannel channel = FileChannel.open(root.resolve("store.lock"), StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
                 FileLock ignored = channel.lock()) {
                return action.run();
            }
        }
    }

    private ObjectNode readIndex() throws IOException {
        Path file = root.resolve("index.json");
        if (!Files.exists(file)) {
            ObjectNode index = JSON.createObjectNode();
            index.putObject("images");
            return index;
        }
        JsonNode node = JSON.readTree(Files.readAllBytes(file));
        if (!(node instanceof ObjectNode o) || !o.path("images").isObject()) {
            throw AirlockException.internal("the image index " + file + " is damaged: it has no 'images' object", null);
        }
        return o;
    }

    private JsonNode readIndexQuietly() {
        try {
            return readIndex();
        } catch (IOException e) {
            throw AirlockException.internal("cannot read the image index under " + root + ": " + e.getMessage(), e);
        }
    }

    private void writeIndex(ObjectNode index) throws IOException {
        Path temporary = root.resolve("index.json.tmp");
        Files.write(temporary, JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(index));
        Files.move(temporary, root.resolve("index.json"), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    private static String hexOf(String digest) {
        String hex = digest.startsWith("sha256:") ? digest.substring(7) : "";
        if (!HEX.matcher(hex).matches()) {
            throw AirlockException.internal("the image index holds a bad digest '" + Printable.of(digest) + "'", null);
        }
        return hex;
    }

    private AirlockException notFound(String name) {
        return new AirlockException(AirlockException.Kind.NOT_FOUND, "no image named '" + Printable.of(String.valueOf(name))
                + "' in " + root + ": see 'airlock image ls', or make one with 'airlock image import' or 'airlock image build'");
    }

    private static void createTraversable(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.setAttribute(dir, "unix:mode", 0711);
    }
}
