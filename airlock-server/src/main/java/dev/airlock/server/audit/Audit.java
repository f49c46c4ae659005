package dev.airlock.server.audit;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * Who is acting on this thread (the interface and client: {@code rest}, {@code mcp-stdio},
 * {@code mcp-http:<session>}, {@code cli}), and the digests the audit log stores instead of raw
 * arguments. The interfaces set the actor around each request; the service layer reads it.
 */
public final class Audit {

    /** The actor of what the server does on its own: expiry, reaping, shutdown. */
    public static final String SERVER = "server";

    private static final ThreadLocal<String> ACTOR = new ThreadLocal<>();

    private Audit() {
    }

    /** The actor of the current thread; {@link #SERVER} when no interface set one. */
    public static String actor() {
        String a = ACTOR.get();
        return a == null ? SERVER : a;
    }

    /** Sets the actor of this thread until the returned scope is closed. */
    public static Scope as(String actor) {
        String previous = ACTOR.get();
        ACTOR.set(actor);
        return () -> {
            if (previous == null) {
                ACTOR.remove();
            } else {
                ACTOR.set(previous);
            }
        };
    }

    /** The actor scope; closing it restores the previous actor. */
    @FunctionalInterface
    public interface Scope extends AutoCloseable {
        @Override
        void close();
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
