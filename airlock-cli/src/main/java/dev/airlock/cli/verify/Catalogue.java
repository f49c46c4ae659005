package dev.airlock.cli.verify;

import dev.airlock.core.AirlockException;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystem;
import java.nio.file.FileSystemAlreadyExistsException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The cases verify runs: the built-in catalogue (one JSON file per case under
 * {@value #RESOURCE_DIR} on the class path) and an operator's own directories of case files.
 */
public final class Catalogue {

    static final String RESOURCE_DIR = "dev/airlock/verify/cases";

    private Catalogue() {
    }

    /** The built-in cases, in file-name order. */
    public static List<VerifyCase> builtIn() {
        URL url = Catalogue.class.getClassLoader().getResource(RESOURCE_DIR);
        if (url == null) {
            throw AirlockException.internal("the built-in verify catalogue " + RESOURCE_DIR + " is missing from the class path", null);
        }
        try {
            URI uri = url.toURI();
            if ("jar".equals(uri.getScheme())) {
                FileSystem fs;
                boolean opened = false;
                try {
                    fs = FileSystems.newFileSystem(uri, Map.of());
                    opened = true;
                } catch (FileSystemAlreadyExistsException e) {
                    fs = FileSystems.getFileSystem(uri);
                }
                try {
                    return read(fs.getPath("/" + RESOURCE_DIR), true);
                } finally {
                    if (opened) {
                        fs.close();
                    }
                }
            }
            return read(Path.of(uri), true);
        } catch (URISyntaxException | IOException e) {
            throw AirlockException.internal("cannot read the built-in verify catalogue: " + e.getMessage(), e);
        }
    }

    /** The cases of an operator's directory: every {@code *.json} file in it, in file-name order. */
    public static List<VerifyCase> directory(Path dir) {
        if (!Files.isDirectory(dir)) {
            throw AirlockException.invalid("catalogue " + dir + " is not a directory: give a directory of case files (NAME.json)");
        }
        try {
            List<VerifyCase> cases = read(dir, false);
            if (cases.isEmpty()) {
                throw AirlockException.invalid("catalogue " + dir + " holds no case file (*.json)");
            }
            return cases;
        } catch (IOException e) {
            throw AirlockException.invalid("cannot read catalogue " + dir + ": " + e.getMessage());
        }
    }

    private static List<VerifyCase> read(Path dir, boolean builtIn) throws IOException {
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".json")).sorted().toList();
        }
        List<VerifyCase> cases = new ArrayList<>();
        for (Path f : files) {
            String fileName = f.getFileName().toString();
            String label = builtIn ? "built-in:" + fileName : f.toString();
            cases.add(CaseParser.parse(label, fileName, Files.readString(f, StandardCharsets.UTF_8)));
        }
        return cases;
    }

    /** Built-in and extra cases together; a name may appear only once. */
    public static List<VerifyCase> merge(List<VerifyCase> builtIn, List<List<VerifyCase>> extra) {
        Map<String, VerifyCase> byName = new LinkedHashMap<>();
        builtIn.forEach(c -> byName.put(c.name(), c));
        for (List<VerifyCase> more : extra) {
            for (VerifyCase c : more) {
                VerifyCase clash = byName.putIfAbsent(c.name(), c);
                if (clash != null) {
                    throw AirlockException.invalid("case file " + c.source() + ": field 'name' '" + c.name()
                            + "' is already used by " + clash.source() + ": give the case another name");
                }
            }
        }
        return List.copyOf(byName.values());
    }

    /** The cases named in {@code names}, in catalogue order; an unknown name is an error listing the known ones. */
    public static List<VerifyCase> select(List<VerifyCase> all, List<String> names) {
        if (names == null || names.isEmpty()) {
            return all;
        }
        List<String> known = CaseParser.names(all);
        for (String n : names) {
            if (!known.contains(n)) {
                throw AirlockException.invalid("no case named '" + n + "': known cases are " + String.join(", ", known));
            }
        }
        return all.stream().filter(c -> names.contains(c.name())).toList();
    }
}
