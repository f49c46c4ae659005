package dev.airlock.oci.image;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Printable;
import dev.airlock.core.YamlField;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A declarative image recipe: a Debian suite, packages, files to add and environment variables, as
 * YAML. {@code airlock image build NAME --recipe FILE} builds one; a few recipes are built in
 * ({@link #builtIn}, such as {@code python-data}), so {@code airlock image build python-data} needs
 * no file at all.
 *
 * <pre>
 *   suite: bookworm                  # optional: this host's release
 *   packages: [python3-numpy, python3-pandas]
 *   files:                           # optional: added after the packages, replacing what they put there
 *     - path: /etc/motd
 *       content: "hello\n"           # the file's text, or
 *     - path: /usr/local/bin/tool
 *       from: tool.sh                # a host file, relative to the recipe's directory
 *       executable: true             # optional: mode 0755 rather than 0644
 *   environment:                     # optional: set for every process of the image's sandboxes
 *     MPLBACKEND: Agg
 * </pre>
 *
 * <p>Every error names the recipe, the line and the field. The files go into the image through the
 * same checks as an imported layer ({@link LayerApplier}); the environment is kept in the image as
 * {@value #ENVIRONMENT_FILE} ({@link #readEnvironment}), so it is part of the image's digest.
 */
public record ImageRecipe(String suite, List<String> packages, List<File> files, Map<String, String> environment) {

    /** Where an image keeps its environment: one {@code NAME=VALUE} per line. */
    public static final String ENVIRONMENT_FILE = "etc/airlock/environment";
    private static final Set<String> FIELDS = Set.of("suite", "packages", "files", "environment");
    private static final Set<String> FILE_FIELDS = Set.of("path", "content", "from", "executable");
    private static final Pattern VARIABLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");
    /** What no image may set: the sandbox's own variables, and what would change every program's loading. */
    private static final Set<String> RESERVED = Set.of("HOME", "USER", "TMPDIR", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT");
    private static final int MAX_TEXT = 1 << 20;
    private static final long MAX_FILE = 64L << 20;
    private static final long MAX_FILES = 256L << 20;
    private static final int MAX_ENVIRONMENT = 64 * 1024;
    private static final String RESOURCES = "recipes/";
    /** The recipes built in, by name. */
    public static final List<String> BUILT_IN = List.of("python-data");

    /** A file to add: its absolute path in the image and its content. */
    public record File(String path, byte[] content, boolean executable) {
    }

    /** The built-in recipe {@code name}, or null if there is none of that name. */
    public static ImageRecipe builtIn(String name) {
        if (!BUILT_IN.contains(name)) {
            return null;
        }
        try (InputStream in = ImageRecipe.class.getResourceAsStream(RESOURCES + name + ".yaml")) {
            if (in == null) {
                throw new IllegalStateException("the built-in recipe " + name + " is missing from the jar");
            }
            return parse("built-in recipe " + name, new String(in.readAllBytes(), StandardCharsets.UTF_8), null);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Reads the recipe file {@code file}; its {@code from} paths are relative to its directory. */
    public static ImageRecipe load(Path file) {
        String text;
        try {
            if (Files.size(file) > MAX_TEXT) {
                throw AirlockException.invalid("the recipe " + file + " is over " + (MAX_TEXT >> 10) + " KiB: a recipe names packages and"
                        + " files, it does not hold them (use 'from' for big files)");
            }
            text = Files.readString(file);
        } catch (IOException e) {
            throw AirlockException.invalid("cannot read the recipe " + file + ": " + e.getMessage());
        }
        return parse(file.toString(), text, file.toAbsolutePath().getParent());
    }

    /**
     * Parses recipe text.
     *
     * @param source the recipe's name in errors
     * @param base   where {@code from} paths are relative to; null: none may be used (built-in recipes)
     */
    public static ImageRecipe parse(String source, String text, Path base) {
        YamlField top = YamlField.parse(source, text, "a recipe names at least its packages (packages: [a, b])");
        Map<String, YamlField> fields = top.map(FIELDS);
        String suite = fields.containsKey("suite") ? fields.get("suite").string() : null;
        if (!fields.containsKey("packages")) {
            throw top.error("'packages' is missing: name the Debian packages to install, such as packages: [python3-numpy]");
        }
        List<String> packages = new ArrayList<>();
        for (YamlField p : fields.get("packages").list()) {
            String name = p.string();
            if (!ImageBuilder.PACKAGE.matcher(name).matches()) {
                throw p.error("'" + Printable.of(name) + "' is not a Debian package name");
            }
            packages.add(name);
        }
        List<File> files = new ArrayList<>();
        long total = 0;
        if (fields.containsKey("files")) {
            for (YamlField f : fields.get("files").list()) {
                File file = file(f, base);
                total += file.content().length;
                if (total > MAX_FILES) {
                    throw f.error("the recipe's files come to more than " + (MAX_FILES >> 20) + " MiB: install big things as packages");
                }
                files.add(file);
            }
        }
        Map<String, String> environment = new LinkedHashMap<>();
        if (fields.containsKey("environment")) {
            int size = 0;
            for (Map.Entry<String, YamlField> e : fields.get("environment").map(null).entrySet()) {
                String name = e.getKey();
                String value = e.getValue().string();
                if (!VARIABLE.matcher(name).matches()) {
                    throw e.getValue().error("'" + Printable.of(name) + "' is not a variable name (letters, digits and _, not starting with a digit)");
                }
                if (RESERVED.contains(name) || name.startsWith("AIRLOCK_")) {
                    throw e.getValue().error(name + " is not the image's to set");
                }
                if (value.indexOf('\n') >= 0 || value.indexOf('\0') >= 0) {
                    throw e.getValue().error("a value must be one line, without NUL");
                }
                size += name.length() + value.length() + 2;
                if (size > MAX_ENVIRONMENT) {
                    throw e.getValue().error("the environment is over " + (MAX_ENVIRONMENT >> 10) + " KiB");
                }
                environment.put(name, value);
            }
        }
        return new ImageRecipe(suite, List.copyOf(packages), List.copyOf(files), Map.copyOf(environment));
    }

    private static File file(YamlField f, Path base) {
        Map<String, YamlField> fields = f.map(FILE_FIELDS);
        YamlField pathField = fields.get("path");
        if (pathField == null) {
            throw f.error("'path' is missing: the file's absolute path in the image, such as /etc/motd");
        }
        String path = pathField.string();
        if (!path.startsWith("/") || path.endsWith("/") || path.contains("\0")
                || List.of(path.substring(1).split("/")).stream().anyMatch(c -> c.isEmpty() || c.equals(".") || c.equals(".."))) {
            throw pathField.error("'" + Printable.of(path) + "' is not a plain absolute path in the image (no '.', '..' or '//')");
        }
        if (("/" + ENVIRONMENT_FILE).equals(path)) {
            throw pathField.error("/" + ENVIRONMENT_FILE + " is written from 'environment': set variables there");
        }
        if (fields.containsKey("content") == fields.containsKey("from")) {
            throw f.error("give the file's 'content' or a host file to copy ('from'), one of the two");
        }
        byte[] content;
        if (fields.containsKey("content")) {
            content = fields.get("content").string().getBytes(StandardCharsets.UTF_8);
        } else {
            YamlField from = fields.get("from");
            if (base == null) {
                throw from.error("a built-in recipe cannot copy host files");
            }
            Path host = base.resolve(from.string());
            try {
                if (!Files.isRegularFile(host, LinkOption.NOFOLLOW_LINKS)) {
                    throw from.error(host + " is not a regular file (a link is not followed)");
                }
                if (Files.size(host) > MAX_FILE) {
                    throw from.error(host + " is over " + (MAX_FILE >> 20) + " MiB: install big things as packages");
                }
                content = Files.readAllBytes(host);
            } catch (IOException e) {
                throw from.error("cannot read " + host + ": " + e.getMessage());
            }
        }
        boolean executable = fields.containsKey("executable") && fields.get("executable").bool();
        return new File(path, content, executable);
    }

    /** The files and the environment file as one uncompressed tar layer, to apply over the packages' tree. */
    byte[] layer() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
            tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
            for (File f : files) {
                add(tar, f.path().substring(1), f.content(), f.executable() ? 0755 : 0644);
            }
            if (!environment.isEmpty()) {
                StringBuilder text = new StringBuilder();
                environment.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
                add(tar, ENVIRONMENT_FILE, text.toString().getBytes(StandardCharsets.UTF_8), 0644);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    private static void add(TarArchiveOutputStream tar, String name, byte[] content, int mode) throws IOException {
        TarArchiveEntry e = new TarArchiveEntry(name);
        e.setSize(content.length);
        e.setMode(mode);
        tar.putArchiveEntry(e);
        tar.write(content);
        tar.closeArchiveEntry();
    }

    /**
     * The environment an image sets ({@value #ENVIRONMENT_FILE} under {@code rootfs}), empty when it
     * has none. The file is the image's and so untrusted: a link is not followed, its size is
     * bounded, and lines that are not {@code NAME=VALUE} with an allowed name are skipped.
     */
    public static Map<String, String> readEnvironment(Path rootfs) {
        Path file = rootfs.resolve(ENVIRONMENT_FILE);
        Map<String, String> env = new LinkedHashMap<>();
        try {
            if (!Files.isDirectory(rootfs.resolve("etc"), LinkOption.NOFOLLOW_LINKS)
                    || !Files.isDirectory(rootfs.resolve("etc/airlock"), LinkOption.NOFOLLOW_LINKS)
                    || !Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS) || Files.size(file) > MAX_ENVIRONMENT) {
                return env;
            }
            for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                int eq = line.indexOf('=');
                if (eq <= 0) {
                    continue;
                }
                String name = line.substring(0, eq);
                if (VARIABLE.matcher(name).matches() && !RESERVED.contains(name) && !name.startsWith("AIRLOCK_") && line.indexOf('\0') < 0) {
                    env.put(name, line.substring(eq + 1));
                }
            }
        } catch (IOException | UncheckedIOException e) {
            return Map.of();
        }
        return env;
    }
}
