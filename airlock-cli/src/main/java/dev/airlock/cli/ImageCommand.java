package dev.airlock.cli;

import dev.airlock.core.AirlockException;
import dev.airlock.core.HostFiles;
import dev.airlock.core.ImageInfo;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.image.ImageBuilder;
import dev.airlock.oci.image.ImageRecipe;
import dev.airlock.oci.image.ImageStore;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code airlock image}: the sandbox images of this host. An image is made by importing an OCI
 * archive or by building one from Debian packages; sandboxes name it ({@code airlock run --image},
 * a profile's {@code image}).
 */
@Command(name = "image", mixinStandardHelpOptions = true, description = "Import, build, list, inspect and remove sandbox images.",
        subcommands = {ImageCommand.Import.class, ImageCommand.Build.class, ImageCommand.Ls.class, ImageCommand.Inspect.class,
                ImageCommand.Rm.class})
final class ImageCommand {

    /** Where, beside the store, builds keep the packages they downloaded: a rebuild fetches only what changed. */
    static final String PACKAGE_CACHE = "debs";

    private static final JsonMapper JSON = JsonMapper.builder().build();

    static ObjectNode toJson(ImageInfo i) {
        ObjectNode n = JSON.createObjectNode();
        n.put("name", i.name());
        n.put("digest", i.digest());
        n.put("sizeBytes", i.sizeBytes());
        n.put("files", i.files());
        n.put("created", i.created().toString());
        n.put("source", i.source());
        return n;
    }

    private static void printAdded(String verb, ImageInfo i) {
        System.out.println(verb + " image " + i.name() + ": " + i.digest() + ", " + size(i.sizeBytes()) + " in " + i.files() + " files");
    }

    /** A size for people: 1.9 MiB. */
    static String size(long bytes) {
        if (bytes < 1024) {
            return bytes + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double v = bytes;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format(java.util.Locale.ROOT, "%.1f %s", v, units[u]);
    }

    @Command(name = "import", mixinStandardHelpOptions = true,
            description = "Import an OCI image layout (directory or tar) or a 'docker save' tar as an image. Layers apply in"
                    + " order with their whiteouts; entries that would leave the image's root are refused, device nodes and"
                    + " fifos dropped, set-id bits cleared, every file owned by root and readable as its owner could.")
    static final class Import implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "FILE", description = "The archive or layout directory.")
        Path file;

        @Option(names = "--name", paramLabel = "NAME", description = "The image's name (default: the file's name without extension).")
        String name;

        @Mixin
        ImageDirOption images = new ImageDirOption();

        @Override
        public Integer call() {
            String n = name != null ? name : file.getFileName().toString().replaceAll("\\.(tar|tar\\.gz|tgz)$", "").toLowerCase();
            printAdded("imported", ImageStore.at(images.resolve(null)).importArchive(file, n));
            return 0;
        }
    }

    @Command(name = "build", mixinStandardHelpOptions = true,
            description = {"Build an image from Debian packages with mmdebstrap (variant minbase plus the packages), from this"
                    + " host's apt sources: the packages named with --packages, or a recipe file's (--recipe: suite, packages,"
                    + " files and environment, in YAML).",
                    "A built-in recipe needs neither: 'airlock image build python-data' makes numpy, pandas, matplotlib and"
                    + " scipy with the code interpreter's kernel."})
    static final class Build implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "NAME", description = "The image's name.")
        String name;

        @Option(names = "--packages", paramLabel = "PKG[,PKG...]", split = ",", description = "Debian packages to add to minbase.")
        List<String> packages = List.of();

        @Option(names = "--recipe", paramLabel = "FILE", description = "A recipe file (YAML: suite, packages, files, environment).")
        Path recipe;

        @Option(names = "--suite", paramLabel = "SUITE", description = "Debian suite (default: this host's release, e.g. bookworm).")
        String suite;

        @Option(names = "--timeout-minutes", paramLabel = "N", description = "Give up after this long (default 30).")
        int timeoutMinutes = 30;

        @Mixin
        ImageDirOption images = new ImageDirOption();

        @Override
        public Integer call() throws IOException {
            ImageRecipe chosen;
            String recipeName;
            if (recipe != null) {
                if (!packages.isEmpty() || suite != null) {
                    throw AirlockException.invalid("--recipe names the packages and the suite: leave out --packages and --suite");
                }
                chosen = ImageRecipe.load(recipe);
                recipeName = recipe.getFileName().toString();
            } else if (packages.isEmpty() && ImageRecipe.builtIn(name) != null) {
                chosen = ImageRecipe.builtIn(name);
                recipeName = name + " (built in)";
                if (suite != null) {
                    chosen = new ImageRecipe(suite, chosen.packages(), chosen.files(), chosen.environment());
                }
            } else {
                chosen = new ImageRecipe(suite, packages, List.of(), java.util.Map.of());
                recipeName = null;
            }
            Path log = Files.createTempFile("airlock-image-build", ".log");
            System.err.println("building image " + name + " with mmdebstrap (log: " + log + ") ...");
            ImageStore store = ImageStore.at(images.resolve(null));
            // downloaded packages are kept beside the store: a rebuild fetches only what changed
            ImageInfo info = new ImageBuilder(store, Duration.ofMinutes(timeoutMinutes), store.root().resolve(PACKAGE_CACHE))
                    .build(name, chosen, log, recipeName);
            Files.deleteIfExists(log);
            printAdded("built", info);
            return 0;
        }
    }

    @Command(name = "ls", mixinStandardHelpOptions = true, description = "List the images, 'system' (the host's /usr) first.")
    static final class Ls implements Callable<Integer> {
        /** What the REST API's image list says of 'system' too. */
        static final String SYSTEM_SOURCE = "the host's /usr";
        @Option(names = "--json", description = "Print a JSON array.")
        boolean json;

        @Mixin
        ImageDirOption images = new ImageDirOption();

        @Override
        public Integer call() {
            List<ImageInfo> all = ImageStore.at(images.resolve(null)).list();
            if (json) {
                ArrayNode a = JSON.createArrayNode();
                a.addObject().put("name", SandboxSpec.SYSTEM_IMAGE).putNull("digest").put("source", SYSTEM_SOURCE);
                all.forEach(i -> a.add(toJson(i)));
                System.out.println(a);
                return 0;
            }
            System.out.printf("%-24s %-19s %10s %8s  %-20s %s%n", "NAME", "DIGEST", "SIZE", "FILES", "CREATED", "SOURCE");
            // the default image, always there: assembled from the host for each sandbox, so it has no digest, size or date
            System.out.printf("%-24s %-19s %10s %8s  %-20s %s%n", SandboxSpec.SYSTEM_IMAGE, "-", "-", "-", "-", SYSTEM_SOURCE);
            for (ImageInfo i : all) {
                System.out.printf("%-24s %-19s %10s %8d  %-20s %s%n", i.name(), i.digest().substring(0, 19),
                        size(i.sizeBytes()), i.files(), i.created().toString().replaceAll("\\.\\d+Z$", "Z"), i.source());
            }
            return 0;
        }
    }

    @Command(name = "inspect", mixinStandardHelpOptions = true, description = "Print one image as JSON.")
    static final class Inspect implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "NAME")
        String name;

        @Mixin
        ImageDirOption images = new ImageDirOption();

        @Override
        public Integer call() {
            System.out.println(JSON.writerWithDefaultPrettyPrinter().writeValueAsString(toJson(ImageStore.at(images.resolve(null)).inspect(name))));
            return 0;
        }
    }

    @Command(name = "rm", mixinStandardHelpOptions = true, description = {"Remove an image; refused while a sandbox uses it.",
            "With the last image goes the package cache that builds keep beside the store (" + PACKAGE_CACHE + ")."})
    static final class Rm implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "NAME")
        String name;

        @Mixin
        ImageDirOption images = new ImageDirOption();

        @Override
        public Integer call() {
            ImageStore store = ImageStore.at(images.resolve(null));
            store.remove(name);
            System.out.println("removed image " + name);
            Path cache = store.root().resolve(PACKAGE_CACHE);
            if (store.list().isEmpty() && Files.isDirectory(cache, LinkOption.NOFOLLOW_LINKS)) {
                long bytes = bytesUnder(cache);
                HostFiles.deleteTree(cache);
                System.out.println("removed the package cache " + cache + " (" + (bytes >> 20) + " MiB): no image is left to rebuild");
            }
            return 0;
        }
    }

    /** The bytes of the regular files under {@code dir} (for a message: 0 where it cannot be read). */
    private static long bytesUnder(Path dir) {
        try (var files = Files.walk(dir)) {
            return files.filter(f -> Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)).mapToLong(f -> f.toFile().length()).sum();
        } catch (IOException | java.io.UncheckedIOException e) {
            return 0;
        }
    }
}
