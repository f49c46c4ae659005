package dev.airlock.oci.image;

import java.time.Instant;

/**
 * What the store knows of one image: its name, the digest of its files ({@link TreeDigest}), their
 * bytes and number, when it was added, and where it came from (the imported file, or the build).
 */
public record ImageInfo(String name, String digest, long sizeBytes, long files, Instant created, String source) {
}
