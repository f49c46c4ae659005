package dev.airlock.core;

import java.time.Instant;

/**
 * One image sandboxes may start from, beside {@code system}: its name, the digest of its files
 * ({@code sha256:...}, over their paths, modes, contents and link targets), their bytes and number,
 * when it was added, and where it came from (the imported file, or the build).
 */
public record ImageInfo(String name, String digest, long sizeBytes, long files, Instant created, String source) {
}
