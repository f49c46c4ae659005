package dev.airlock.microvm;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Printable;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The guest's kernel and the modules its initramfs carries, prepared from Debian's
 * {@code linux-image} package by {@code guest-kernel.sh} (a class-path resource beside this class)
 * into a cache directory, and reused from there on every later start.
 *
 * @param release the kernel release, such as {@code 6.1.0-57-amd64}
 * @param vmlinux the uncompressed kernel, which QEMU boots directly (PVH)
 * @param modules the modules' directory, with {@code <name>.ko} files
 * @param load    the modules' names, dependencies first: the order to load them in
 */
record GuestKernel(String release, Path vmlinux, Path modules, List<String> load) {

    private static final String SCRIPT = "guest-kernel.sh";
    /** The first preparation downloads about 70 MB and unpacks it; later ones only look. */
    private static final long PREPARE_TIMEOUT_SECONDS = 600;

    /** Prepares the kernel in {@code cacheDir} if it is not there yet, and describes it. */
    static GuestKernel prepare(Path cacheDir) {
        Path script = null;
        try {
            Files.createDirectories(cacheDir);
            script = Files.createTempFile(cacheDir, "guest-kernel", ".sh");
            try (InputStream in = GuestKernel.class.getResourceAsStream(SCRIPT)) {
                if (in == null) {
                    throw AirlockException.internal("the script " + SCRIPT + " is missing from the class path: build airlock-microvm"
                            + " with Maven, which copies src/main/sh", null);
                }
                Files.write(script, in.readAllBytes());
            }
            Path log = cacheDir.resolve("guest-kernel.log");
            Process p = new ProcessBuilder("sh", script.toString(), cacheDir.toString())
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .redirectError(log.toFile())
                    .start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!p.waitFor(PREPARE_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw AirlockException.unavailable("preparing the microVM guest kernel took longer than " + PREPARE_TIMEOUT_SECONDS
                        + "s: see " + log);
            }
            if (p.exitValue() != 0) {
                throw AirlockException.unavailable("cannot prepare the microVM guest kernel from Debian's package: "
                        + Printable.of(Files.readString(log, StandardCharsets.UTF_8).strip(), 500));
            }
            return describe(Path.of(out));
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot prepare the microVM guest kernel in " + cacheDir + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw AirlockException.unavailable("interrupted while preparing the microVM guest kernel");
        } finally {
            if (script != null) {
                try {
                    Files.deleteIfExists(script);
                } catch (IOException ignored) {
                    // a stray copy of the script in the cache harms nothing
                }
            }
        }
    }

    /** Reads what {@code guest-kernel.sh} left in {@code dir}. */
    static GuestKernel describe(Path dir) throws IOException {
        List<String> load = Files.readAllLines(dir.resolve("modules.load"), StandardCharsets.UTF_8).stream()
                .map(String::strip).filter(s -> !s.isEmpty()).toList();
        return new GuestKernel(Files.readString(dir.resolve("release"), StandardCharsets.UTF_8).strip(), dir.resolve("vmlinux"),
                dir.resolve("modules"), load);
    }
}
