package dev.airlock.client;

import java.time.Instant;
import java.util.List;

/**
 * A snapshot of a sandbox's files ({@code /workspace} and {@code /tmp}), as the server described
 * it. Restore or fork it with {@link Airlock#fork(String, int)}; it expires at {@code expiresAt}.
 *
 * @param digest  the SHA-256 of its manifest, which the server checks again before every restore
 * @param leftOut files the snapshot could not read, one line each (links, special files and empty
 *                directories are skipped without a line)
 * @param memory  whether it also holds the sandbox's processes with their memory ({@link
 *                RemoteSandbox#snapshotWithMemory()}, gVisor and microVM tiers); a fork of it starts them again
 */
public record SnapshotInfo(String id, String sandbox, String profile, String image, String imageDigest, String digest, long bytes,
                           int files, List<String> leftOut, Instant createdAt, Instant expiresAt, boolean memory) {

    public SnapshotInfo {
        leftOut = leftOut == null ? List.of() : List.copyOf(leftOut);
    }
}
