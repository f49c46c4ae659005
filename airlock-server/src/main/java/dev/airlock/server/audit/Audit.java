package dev.airlock.server.audit;

import dev.airlock.server.policy.Caller;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * Who the audit log files a record under (the current call's {@link Caller}), and the digests it stores
 * instead of raw arguments.
 */
public final class Audit {

    /** The actor of what the server does on its own: expiry, reaping, shutdown. */
    public static final String SERVER = "server";

    private Audit() {
    }

    /** The actor of the current call: its caller's {@link Caller#actor()}, or {@link #SERVER}. */
    public static String actor() {
        Caller c = Caller.current();
        return c == null ? SERVER : c.actor();
    }

    /** {@code sha256:<hex>} of the bytes. */
    public static String digest(byte[] bytes) {
        try {
            return "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    /** Digest of a UTF-8 string; null stays null. */
    public static String digest(String text) {
        return text == null ? null : digest(text.getBytes(StandardCharsets.UTF_8));
    }

    /** Digest of an argument vector: the arguments joined by NUL bytes. */
    public static String digest(List<String> argv) {
        return digest(String.join("\0", argv));
    }
}
