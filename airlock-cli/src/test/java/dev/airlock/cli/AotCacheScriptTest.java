package dev.airlock.cli;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * bin/aot.sh, the CLI's AOT cache choice, run by bash as bin/airlock and the installed launcher run
 * it, against a stand-in Java runtime (its {@code java} writes the cache a training asks for) and a
 * stand-in jar with a lib directory: a cache is used while nothing it was trained from is newer, a
 * stale one is trained again and takes the time its training started, and {@code run --server}
 * starts from a current {@code run} cache while its own is being trained.
 */
class AotCacheScriptTest {

    private static final Path AOT_SH = Path.of("").toAbsolutePath().getParent().resolve("bin/aot.sh");

    @TempDir
    Path dir;
    private Path jdk;
    private Path jar;

    @BeforeEach
    void standIns() throws IOException {
        jdk = dir.resolve("jdk");
        Files.createDirectories(jdk.resolve("bin"));
        Files.createDirectories(jdk.resolve("lib"));
        Files.writeString(jdk.resolve("lib/modules"), "modules");
        // the stand-in JVM: a training (-XX:AOTCacheOutput=FILE) writes FILE, after rebuilding the jar when told to
        Path java = jdk.resolve("bin/java");
        Files.writeString(java, """
                #!/bin/bash
                for a in "$@"; do
                  case $a in
                    -XX:AOTCacheOutput=*)
                      if [ -n "${REBUILT_WHILE_TRAINING:-}" ]; then sleep 0.05; touch "$AIRLOCK_JAR"; fi
                      echo trained > "${a#-XX:AOTCacheOutput=}" ;;
                  esac
                done
                """);
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
        jar = dir.resolve("app/airlock-cli.jar");
        Files.createDirectories(jar.resolveSibling("lib"));
        Files.writeString(jar, "jar");
        Files.writeString(jar.resolveSibling("lib/dep.jar"), "dep");
        Instant hourAgo = Instant.now().minusSeconds(3600);
        for (Path p : List.of(jdk.resolve("lib/modules"), jar, jar.resolveSibling("lib"), jar.resolveSibling("lib/dep.jar"))) {
            Files.setLastModifiedTime(p, FileTime.from(hourAgo));
        }
    }

    /** Sources bin/aot.sh as the launchers do, runs {@code airlock_jvm_flags ARGS} and answers the cache it chose ("none": none). */
    private String cacheFor(Map<String, String> env, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("bash", "-c",
                "set -euo pipefail; source \"$1\"; shift; airlock_jvm_flags \"$@\"; echo \"${AIRLOCK_AOT_CACHE:-none}\"", "aot", AOT_SH.toString()));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().put("AIRLOCK_HOME", dir.resolve("app").toString());
        pb.environment().put("JAVA_HOME", jdk.toString());
        pb.environment().put("AIRLOCK_JAR", jar.toString());
        pb.environment().put("XDG_CACHE_HOME", dir.resolve("cache").toString());
        pb.environment().put("AIRLOCK_AOT", "foreground");
        pb.environment().putAll(env);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        return out;
    }

    private String cacheFor(String... args) throws Exception {
        return cacheFor(Map.of(), args);
    }

    @Test
    void aRunTrainsItsCacheAndTheShortCommandsAfterItStartFromIt() throws Exception {
        assertThat(cacheFor("doctor")).as("before any run").isEqualTo("none");
        String trained = cacheFor("run", "--lang", "python", "--code", "pass");
        assertThat(trained).endsWith(".aot").doesNotEndWith("-client.aot");
        assertThat(Path.of(trained)).hasContent("trained");
        assertThat(cacheFor("doctor")).as("any short command").isEqualTo(trained);
        assertThat(cacheFor("serve")).as("a long-running one: the full JIT, no cache").isEqualTo("none");
        String client = cacheFor("run", "--server", "--lang", "python", "--code", "pass");
        assertThat(client).isEqualTo(trained.replace(".aot", "-client.aot"));
        assertThat(Path.of(client)).hasContent("trained");
    }

    @Test
    void aCacheOlderThanAJarIsNotUsedAndTheNextRunTrainsItAgain() throws Exception {
        Path trained = Path.of(cacheFor("run", "--code", "pass"));
        // trained half an hour ago; one jar of its lib directory replaced a minute ago
        Files.setLastModifiedTime(trained, FileTime.from(Instant.now().minusSeconds(1800)));
        Files.setLastModifiedTime(jar.resolveSibling("lib/dep.jar"), FileTime.from(Instant.now().minusSeconds(60)));
        assertThat(cacheFor("doctor")).as("a jar of the class path is newer than the cache").isEqualTo("none");
        assertThat(cacheFor("run", "--code", "pass")).as("trained again").isEqualTo(trained.toString());
        assertThat(cacheFor("doctor")).isEqualTo(trained.toString());
    }

    @Test
    void aCacheWhoseJarWasRebuiltWhileItTrainedIsStale() throws Exception {
        assertThat(cacheFor(Map.of("REBUILT_WHILE_TRAINING", "1"), "run", "--code", "pass"))
                .as("the cache takes the time its training started, before the rebuild").isEqualTo("none");
        assertThat(cacheFor("run", "--code", "pass")).as("the next run trains it again").endsWith(".aot");
    }

    @Test
    void runOnAServerStartsFromTheRunCacheWhileItsOwnIsBeingTrained() throws Exception {
        String run = cacheFor("run", "--code", "pass");
        // another command is training the client cache: its lock is there
        Files.createDirectory(Path.of(run.replace(".aot", "-client.aot.lock")));
        assertThat(cacheFor(Map.of("AIRLOCK_AOT", "1"), "run", "--server", "--code", "pass")).isEqualTo(run);
    }
}
