package dev.airlock.oci.image;

import dev.airlock.core.ImageInfo;
import dev.airlock.core.AirlockException;
import dev.airlock.core.HostFiles;
import dev.airlock.core.Printable;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * Builds an image from Debian packages with mmdebstrap: variant {@code minbase} plus the packages
 * asked for, from the host's configured apt sources, written as one tar and added to the store
 * like an imported layer (so the same neutralisation applies: the device nodes of /dev go, set-id
 * bits are cleared).
 *
 * <p>The suite is the host's own release unless another is named; for the host's release the
 * host's source files are used as they are (with their updates and security suites), for another
 * the host's mirrors of its own release are used with the suite named.
 */
public final class ImageBuilder {

    static final Pattern PACKAGE = Pattern.compile("[a-z0-9][a-z0-9+.-]{0,99}");
    private static final Pattern SUITE = Pattern.compile("[a-z][a-z0-9-]{0,39}");
    private static final int MAX_PACKAGES = 200;
    private static final Path APT = Path.of("/etc/apt");

    private final ImageStore store;
    private final Duration timeout;
    private final Path packageCache;

    /**
     * @param packageCache a host directory where downloaded .deb files are kept between builds
     *                     (mmdebstrap's sync-in and sync-out hooks), so a rebuild downloads only what
     *                     changed; null: none, every build downloads everything
     */
    public ImageBuilder(ImageStore store, Duration timeout, Path packageCache) {
        this.store = store;
        this.timeout = timeout;
        this.packageCache = packageCache;
    }

    /**
     * Builds {@code name} from {@code packages} of {@code suite} (null: the host's release).
     *
     * @param log where mmdebstrap's progress goes (its stderr)
     */
    public ImageInfo build(String name, List<String> packages, String suite, Path log) {
        return build(name, new ImageRecipe(suite, packages, List.of(), java.util.Map.of()), log, null);
    }

    /**
     * Builds {@code name} from {@code recipe}: its packages with mmdebstrap, then its files and
     * environment as a layer over them.
     *
     * @param recipeName how the image's source names the recipe (null: the image's source lists the packages)
     * @param log        where mmdebstrap's progress goes (its stderr)
     */
    public ImageInfo build(String name, ImageRecipe recipe, Path log, String recipeName) {
        ImageStore.checkName(name);
        List<String> packages = recipe.packages();
        String suite = recipe.suite();
        if (packages.size() > MAX_PACKAGES) {
            throw AirlockException.invalid("at most " + MAX_PACKAGES + " packages may be named; a package's dependencies come with it");
        }
        for (String p : packages) {
            if (!PACKAGE.matcher(p).matches()) {
                throw AirlockException.invalid("'" + Printable.of(p) + "' is not a Debian package name");
            }
        }
        String hostSuite = hostRelease();
        String chosen = suite == null || suite.isBlank() ? hostSuite : suite;
        if (!SUITE.matcher(chosen).matches()) {
            throw AirlockException.invalid("'" + Printable.of(chosen) + "' is not a Debian suite name (such as bookworm)");
        }
        Path mmdebstrap = findMmdebstrap();
        Path work = null;
        try {
            Files.createDirectories(store.root().resolve("tmp"));
            work = Files.createTempDirectory(store.root().resolve("tmp"), "build");
            Path tar = work.resolve("rootfs.tar");
            List<String> command = new ArrayList<>(List.of(mmdebstrap.toString(), "--variant=minbase", "--format=tar", "--quiet",
                    // no fsync per file: the result is a tar, and a build that fails is thrown away
                    "--dpkgopt=force-unsafe-io"));
            if (!packages.isEmpty()) {
                command.add("--include=" + String.join(",", packages));
            }
            if (packageCache != null) {
                Files.createDirectories(packageCache);
                String cache = packageCache.toAbsolutePath().toString();
                if (!cache.matches("[A-Za-z0-9/._+-]+")) {
                    throw AirlockException.invalid("the package cache " + cache + " must be a plain path (letters, digits, / . _ + -)");
                }
                command.addAll(List.of("--skip=essential/unlink",
                        "--setup-hook=mkdir -p \"$1\"/var/cache/apt/archives/",
                        "--setup-hook=sync-in " + cache + " /var/cache/apt/archives/",
                        "--customize-hook=sync-out /var/cache/apt/archives " + cache));
            }
            command.add("--");
            command.add(chosen);
            command.add(tar.toString());
            command.addAll(mirrors(hostSuite, chosen));
            Process process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                    .start();
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                process.waitFor();
                throw AirlockException.unavailable("mmdebstrap did not finish within " + timeout.toMinutes() + " minutes; see " + log);
            }
            if (process.exitValue() != 0 || !Files.isRegularFile(tar)) {
                throw AirlockException.unavailable("mmdebstrap failed (exit " + process.exitValue() + "): " + tail(log)
                        + " (the whole log: " + log + ")");
            }
            String source = "mmdebstrap " + chosen + " minbase" + (recipeName != null ? " + recipe " + recipeName
                    : packages.isEmpty() ? "" : " + " + String.join(",", packages));
            try (InputStream in = Files.newInputStream(tar)) {
                return store.add(name, source, in, new java.io.ByteArrayInputStream(recipe.layer()));
            }
        } catch (IOException e) {
            throw AirlockException.internal("cannot build image '" + name + "': " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw AirlockException.unavailable("the build of image '" + name + "' was interrupted");
        } finally {
            if (work != null) {
                HostFiles.deleteTree(work);
            }
        }
    }

    private static Path findMmdebstrap() {
        for (String dir : List.of("/usr/bin", "/bin", "/usr/local/bin")) {
            Path p = Path.of(dir, "mmdebstrap");
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        throw AirlockException.unavailable("mmdebstrap is not installed: apt-get install mmdebstrap (Debian/Ubuntu)");
    }

    /** The host's release codename, from /etc/os-release. */
    static String hostRelease() {
        try {
            for (String line : Files.readAllLines(Path.of("/etc/os-release"))) {
                if (line.startsWith("VERSION_CODENAME=")) {
                    return line.substring("VERSION_CODENAME=".length()).replace("\"", "").trim();
                }
            }
        } catch (IOException e) {
            // fall through
        }
        throw AirlockException.unavailable("cannot tell this host's Debian release (no VERSION_CODENAME in /etc/os-release): name a --suite");
    }

    /**
     * mmdebstrap's MIRROR arguments: the host's source files apt reads when building the host's
     * release, else the URIs of the host's sources of its release (for mmdebstrap to pair with the
     * suite named).
     */
    private static List<String> mirrors(String hostSuite, String suite) throws IOException {
        List<Path> files = new ArrayList<>();
        if (Files.isRegularFile(APT.resolve("sources.list"))) {
            files.add(APT.resolve("sources.list"));
        }
        if (Files.isDirectory(APT.resolve("sources.list.d"))) {
            try (DirectoryStream<Path> d = Files.newDirectoryStream(APT.resolve("sources.list.d"), "*.{list,sources}")) {
                d.forEach(files::add);
            }
        }
        Set<String> uris = new LinkedHashSet<>();
        List<String> withEntries = new ArrayList<>();
        for (Path f : files) {
            List<String> found = urisOf(Files.readAllLines(f), hostSuite);
            if (!found.isEmpty() || hasEntries(Files.readAllLines(f))) {
                withEntries.add(f.toString());
            }
            uris.addAll(found);
        }
        if (withEntries.isEmpty()) {
            throw AirlockException.unavailable("this host has no apt sources (/etc/apt/sources.list, /etc/apt/sources.list.d): configure"
                    + " a Debian mirror first");
        }
        if (suite.equals(hostSuite)) {
            return withEntries;
        }
        if (uris.isEmpty()) {
            throw AirlockException.unavailable("no apt source of this host serves its own release " + hostSuite
                    + ", so none can be used for " + suite + ": build the host's release, or configure a Debian mirror");
        }
        return List.copyOf(uris);
    }

    private static boolean hasEntries(List<String> lines) {
        return lines.stream().map(String::trim).anyMatch(l -> l.startsWith("deb ") || l.startsWith("Types:"));
    }

    /** URIs of the deb sources (one-line or deb822) that serve exactly suite {@code release}. */
    static List<String> urisOf(List<String> lines, String release) {
        List<String> uris = new ArrayList<>();
        List<String> stanzaUris = new ArrayList<>();
        boolean stanzaSuite = false;
        boolean stanzaDeb = false;
        List<String> all = new ArrayList<>(lines);
        all.add("");
        for (String raw : all) {
            String line = raw.trim();
            if (line.isEmpty()) {
                if (stanzaDeb && stanzaSuite) {
                    uris.addAll(stanzaUris);
                }
                stanzaUris = new ArrayList<>();
                stanzaSuite = false;
                stanzaDeb = false;
            } else if (line.startsWith("#")) {
                continue;
            } else if (line.startsWith("deb ")) {
                String[] words = line.replaceAll("\\[[^]]*]", " ").trim().split("\\s+");
                if (words.length >= 3 && words[2].equals(release)) {
                    uris.add(words[1]);
                }
            } else if (line.startsWith("Types:")) {
                stanzaDeb = List.of(line.substring(6).trim().split("\\s+")).contains("deb");
            } else if (line.startsWith("URIs:")) {
                stanzaUris.addAll(List.of(line.substring(5).trim().split("\\s+")));
            } else if (line.startsWith("Suites:")) {
                stanzaSuite = List.of(line.substring(7).trim().split("\\s+")).contains(release);
            }
        }
        return uris;
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join(" | ", lines.subList(Math.max(0, lines.size() - 5), lines.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }
}
