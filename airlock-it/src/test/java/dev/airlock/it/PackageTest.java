package dev.airlock.it;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Airlock as it installs (docs/install.md): {@code bin/airlock package} builds the Debian package
 * and the tarball from this tree; the tarball, unpacked anywhere, runs a sandbox with its own Java
 * runtime and no JDK on the PATH; the package holds what a service needs, declares its dependencies
 * the Debian way, and its unit is one systemd accepts. Installing it into a Debian root, upgrading
 * and purging it: {@link PackageInstallTest} (the full lane).
 */
class PackageTest {

    /** The checkout: the integration tests run in airlock-it. */
    static final Path HOME = Path.of("").toAbsolutePath().getParent();

    /** The package and the tarball built for this class, and what the build printed. */
    record Built(Path deb, Path tarball, String output) {
    }

    private static Built built;

    @BeforeAll
    static void buildThem() throws Exception {
        built = build();
    }

    /** Runs {@code bin/airlock package} with {@code env}, and finds what it made. */
    static Built build() throws Exception {
        Result r = run(List.of(HOME.resolve("bin/airlock").toString(), "package"), Map.of(), HOME, Duration.ofMinutes(10));
        assertThat(r.code()).as(r.output()).isZero();
        return built(r.output());
    }

    /** The package and the tarball that {@code bin/airlock package} printed (each line: SHA-256, size, path). */
    static Built built(String output) {
        Path deb = null;
        Path tarball = null;
        for (String line : output.split("\n")) {
            String[] parts = line.trim().split("\\s+");
            if (parts.length == 3 && parts[2].endsWith(".deb")) {
                deb = Path.of(parts[2]);
            } else if (parts.length == 3 && parts[2].endsWith(".tar.gz")) {
                tarball = Path.of(parts[2]);
            }
        }
        assertThat(deb).as(output).isNotNull().exists();
        assertThat(tarball).as(output).isNotNull().exists();
        return new Built(deb, tarball, output);
    }

    record Result(int code, String output) {
    }

    /** Runs {@code command} in {@code dir} with {@code env} added; its output and error together. */
    static Result run(List<String> command, Map<String, String> env, Path dir, Duration timeout) throws IOException, InterruptedException {
        Path out = Files.createTempFile("airlock-package", ".out");
        try {
            ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).redirectOutput(out.toFile());
            pb.environment().putAll(env);
            Process p = pb.start();
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly().waitFor();
                throw new AssertionError(command + " ran past " + timeout + ": " + Files.readString(out));
            }
            return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
        }
    }

    /** The tarball unpacked into {@code dir}: its one top directory. */
    private static Path unpack(Path dir) throws IOException, InterruptedException {
        assertThat(run(List.of("tar", "-xzf", built.tarball().toString(), "-C", dir.toString()), Map.of(), dir, Duration.ofMinutes(2)).code())
                .isZero();
        try (var entries = Files.list(dir)) {
            return entries.findFirst().orElseThrow();
        }
    }

    @Test
    void theTarballRunsASandboxFromAnyDirectoryWithItsOwnRuntime(@TempDir Path dir) throws Exception {
        Path unpacked = unpack(dir);
        assertThat(unpacked.getFileName().toString()).startsWith("airlock-");
        assertThat(unpacked.resolve("runtime/bin/java")).isExecutable();
        assertThat(unpacked.resolve("runtime/jmods")).doesNotExist();
        // no JDK to find: the PATH holds the system's tools only, and JAVA_HOME names nothing; no AOT cache
        // trained in the background beside the test (the next test's business)
        Map<String, String> bare = Map.of("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", "JAVA_HOME", "/nonexistent", "HOME", dir.toString(),
                "AIRLOCK_AOT", "0");
        Result version = run(List.of(unpacked.resolve("bin/airlock").toString(), "--version"), bare, dir, Duration.ofMinutes(1));
        assertThat(version.code()).as(version.output()).isZero();
        // under a umask that takes read and enter from group and others (systemd's UMask=0077, a careful
        // operator's shell): the sandbox's ids must still read the root file system made for it
        Result ran = run(List.of("sh", "-c", "umask 077 && exec \"$0\" \"$@\"", unpacked.resolve("bin/airlock").toString(), "run", "--lang",
                "python", "--code", "print(6*7)"), bare, dir, Duration.ofMinutes(2));
        assertThat(ran.code()).as(ran.output()).isZero();
        assertThat(ran.output()).contains("42");
        // through a link from elsewhere, as /usr/bin/airlock is one
        Path link = dir.resolve("elsewhere/airlock");
        Files.createDirectories(link.getParent());
        Files.createSymbolicLink(link, unpacked.resolve("bin/airlock"));
        assertThat(run(List.of(link.toString(), "--version"), bare, dir, Duration.ofMinutes(1)).code()).isZero();
    }

    /**
     * An installed CLI starts its short commands from the JDK's AOT cache, as a checkout's does (about
     * twice as fast, README): the first {@code run} trains one in the user's cache directory (here in
     * the foreground), and the next command's JVM, told to refuse to start without a usable cache
     * ({@code -XX:AOTMode=on}), starts: the launcher found the cache and it fits the runtime and jars.
     */
    @Test
    void theTarballsShortCommandsStartFromAnAotCacheOfTheirOwn(@TempDir Path dir) throws Exception {
        Path airlock = unpack(dir).resolve("bin/airlock");
        Map<String, String> bare = Map.of("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", "HOME", dir.toString());
        List<String> run = List.of(airlock.toString(), "run", "--lang", "python", "--code", "print(6*7)");
        Map<String, String> requireCache = new java.util.HashMap<>(bare);
        requireCache.put("JAVA_TOOL_OPTIONS", "-XX:AOTMode=on");
        // without a cache (AIRLOCK_AOT=0: none is looked for or trained) such a JVM does not start
        Map<String, String> off = new java.util.HashMap<>(requireCache);
        off.put("AIRLOCK_AOT", "0");
        assertThat(run(List.of(airlock.toString(), "--version"), off, dir, Duration.ofMinutes(1)).code()).isNotZero();

        Map<String, String> train = new java.util.HashMap<>(bare);
        train.put("AIRLOCK_AOT", "foreground");
        Result first = run(run, train, dir, Duration.ofMinutes(3));
        assertThat(first.code()).as(first.output()).isZero();
        assertThat(first.output()).contains("42");
        assertThat(dir.resolve(".cache/airlock/aot")).as("the user's AOT cache directory after a first run").isDirectory();
        try (var files = Files.walk(dir.resolve(".cache/airlock/aot"))) {
            assertThat(files.filter(f -> f.toString().endsWith(".aot")).count()).as("AOT caches trained").isEqualTo(1);
        }
        Result next = run(run, requireCache, dir, Duration.ofMinutes(2));
        assertThat(next.code()).as(next.output()).isZero();
        assertThat(next.output()).contains("42");

        // run --server has a cache of its own, trained on that client path alone (a stand-in server, no sandbox); the call
        // below finds no server (a port nothing listens on), so it exits 3 with that message, once its JVM has started
        Path token = dir.resolve("token");
        Files.writeString(token, "t".repeat(40));
        Files.setPosixFilePermissions(token, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        int closed;
        try (var socket = new java.net.ServerSocket(0)) {
            closed = socket.getLocalPort();
        }
        List<String> onServer = List.of(airlock.toString(), "run", "--server", "--url", "http://127.0.0.1:" + closed, "--token-file",
                token.toString(), "--lang", "python", "--code", "pass");
        Result trained = run(onServer, train, dir, Duration.ofMinutes(2));
        assertThat(trained.code()).as(trained.output()).isEqualTo(3);
        try (var files = Files.walk(dir.resolve(".cache/airlock/aot"))) {
            assertThat(files.map(f -> f.getFileName().toString()).filter(f -> f.endsWith(".aot")).toList()).as("AOT caches trained")
                    .hasSize(2).anyMatch(f -> f.endsWith("-client.aot"));
        }
        Result fromItsCache = run(onServer, requireCache, dir, Duration.ofMinutes(1));
        assertThat(fromItsCache.code()).as(fromItsCache.output()).isEqualTo(3);
        assertThat(fromItsCache.output()).contains("cannot reach the server");
    }

    @Test
    void thePackageHoldsAServiceAndDeclaresItsDependencies() throws Exception {
        Result info = run(List.of("dpkg-deb", "--info", built.deb().toString()), Map.of(), HOME, Duration.ofMinutes(1));
        assertThat(info.code()).as(info.output()).isZero();
        assertThat(info.output()).contains("Package: airlock", "Architecture: amd64", "Depends: runc", "Suggests: runsc, qemu-system-x86, squashfs-tools, mmdebstrap",
                "postinst", "prerm", "postrm", "conffiles");
        Result contents = run(List.of("dpkg-deb", "--contents", built.deb().toString()), Map.of(), HOME, Duration.ofMinutes(1));
        assertThat(contents.code()).isZero();
        List<String> paths = new ArrayList<>();
        for (String line : contents.output().split("\n")) {
            String[] parts = line.trim().split("\\s+");
            assertThat(parts[1]).as("every file root's: %s", line).isEqualTo("root/root");
            paths.add(parts[5]);
        }
        assertThat(paths).contains("./usr/bin/airlock", "./usr/lib/airlock/bin/airlock", "./usr/lib/airlock/airlock-cli.jar",
                "./usr/lib/airlock/runtime/bin/java", "./lib/systemd/system/airlock.service", "./etc/airlock/airlock.env",
                "./etc/airlock/policy.yaml.example", "./usr/share/doc/airlock/copyright", "./usr/share/doc/airlock/changelog.gz", "./usr/share/lintian/overrides/airlock");
        Result version = run(List.of("dpkg-deb", "--field", built.deb().toString(), "Version"), Map.of(), HOME, Duration.ofMinutes(1));
        assertThat(version.output().trim()).as("a Debian version: the project's, the commit's day and id").matches("[0-9][0-9.]*(~git[0-9]{8}\\.[0-9a-f]{7})?");
    }

    @Test
    void systemdAcceptsTheUnit(@TempDir Path dir) throws Exception {
        Result unpacked = run(List.of("dpkg-deb", "-x", built.deb().toString(), dir.toString()), Map.of(), dir, Duration.ofMinutes(2));
        assertThat(unpacked.code()).as(unpacked.output()).isZero();
        // the unit as installed, its command where this test unpacked it (verify checks that it is executable)
        String unit = Files.readString(dir.resolve("lib/systemd/system/airlock.service"))
                .replace("ExecStart=/usr/bin/airlock", "ExecStart=" + dir.resolve("usr/lib/airlock/bin/airlock"));
        Path copy = dir.resolve("airlock.service");
        Files.writeString(copy, unit);
        Result verify = run(List.of("systemd-analyze", "verify", copy.toString()), Map.of("SYSTEMD_LOG_LEVEL", "warning"), dir,
                Duration.ofMinutes(1));
        assertThat(verify.code()).as(verify.output()).isZero();
        assertThat(verify.output()).as("no warning of the unit's own").doesNotContain("airlock.service:");
    }
}
