package dev.airlock.server.mcp;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/** What a file's bytes are: an image (by magic bytes, never by name), UTF-8 text, or other binary. */
final class FileContents {

    private FileContents() {
    }

    /** The image MIME type of {@code b}, or null if it is not a PNG, JPEG, GIF or WebP image. */
    static String imageType(byte[] b) {
        if (startsWith(b, 0, 0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a)) {
            return "image/png";
        }
        if (startsWith(b, 0, 0xff, 0xd8, 0xff)) {
            return "image/jpeg";
        }
        if (startsWith(b, 0, 'G', 'I', 'F', '8', '7', 'a') || startsWith(b, 0, 'G', 'I', 'F', '8', '9', 'a')) {
            return "image/gif";
        }
        if (startsWith(b, 0, 'R', 'I', 'F', 'F') && startsWith(b, 8, 'W', 'E', 'B', 'P')) {
            return "image/webp";
        }
        return null;
    }

    private static boolean startsWith(byte[] b, int offset, int... magic) {
        if (b.length < offset + magic.length) {
            return false;
        }
        for (int i = 0; i < magic.length; i++) {
            if ((b[offset + i] & 0xff) != magic[i]) {
                return false;
            }
        }
        return true;
    }

    /** The bytes as text if they are valid UTF-8 without NUL bytes, else null. */
    static String text(byte[] b) {
        for (byte x : b) {
            if (x == 0) {
                return null;
            }
        }
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    /** A MIME type for a text file, from its name; the content decides whether it is text at all. */
    static String textType(String path) {
        String p = path.toLowerCase(Locale.ROOT);
        if (p.endsWith(".json")) return "application/json";
        if (p.endsWith(".csv")) return "text/csv";
        if (p.endsWith(".html") || p.endsWith(".htm")) return "text/html";
        if (p.endsWith(".md")) return "text/markdown";
        if (p.endsWith(".svg")) return "image/svg+xml";
        if (p.endsWith(".xml")) return "application/xml";
        return "text/plain";
    }
}
