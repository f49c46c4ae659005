package dev.airlock.core;

/**
 * Untrusted text made safe to put in a message, a log line, a header or a report: the one place
 * Airlock does this. What a sandbox, an agent or a client named may carry terminal escapes, line
 * breaks that forge a second log line, bidirectional overrides, lone surrogates or megabytes of
 * text; what comes out of here is printable ASCII only and bounded.
 *
 * <p>Two renderings: {@link #of} replaces each character outside printable ASCII with {@code '?'}
 * (for messages, logs and header values); {@link #quoted} escapes them, so a report shows exactly
 * which bytes were there. The SDK (airlock-client) keeps its own copy because it depends on no
 * other Airlock module and compiles to Java 17.
 */
public final class Printable {

    /** The cap of {@link #of(String)}: long enough for a path or a parser's message, short enough for a log line. */
    public static final int MAX = 200;

    /** Shown where text was cut; counts within the cap. */
    static final String CUT = "...";

    private Printable() {
    }

    /** {@code s} as {@link #of(String, int)} with the cap {@link #MAX}. */
    public static String of(String s) {
        return of(s, MAX);
    }

    /**
     * {@code s} with each character outside printable ASCII (0x20-0x7e) as one {@code '?'}: a control
     * character, a non-ASCII character, a surrogate pair (one '?', never split) and a lone surrogate
     * alike. At most {@code max} characters; text that does not fit ends in {@code ...} within them.
     * "null" for null. Reads no more of {@code s} than it can show, so a huge input costs nothing.
     */
    public static String of(String s, int max) {
        requireRoomForTheCut(max);
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder(Math.min(s.length(), max));
        int i = 0;
        while (i < s.length()) {
            if (b.length() == max) {
                b.setLength(max - CUT.length());
                return b.append(CUT).toString();
            }
            char c = s.charAt(i);
            b.append(c >= 0x20 && c <= 0x7e ? c : '?');
            i += Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1)) ? 2 : 1;
        }
        return b.toString();
    }

    /**
     * {@code s} in double quotes, escaped as a JSON string literal would be, with every character outside
     * printable ASCII as {@code \}{@code uXXXX} (lone surrogates too), so a reader sees what was sent.
     * At most the first {@code maxChars} characters of {@code s}, followed by {@code ...} inside the quotes
     * when there were more. "null" for null.
     */
    public static String quoted(String s, int maxChars) {
        if (maxChars < 0) {
            throw new IllegalArgumentException("maxChars must not be negative, was " + maxChars);
        }
        if (s == null) {
            return "null";
        }
        int shown = Math.min(s.length(), maxChars);
        StringBuilder b = new StringBuilder(shown + 2 + CUT.length()).append('"');
        for (int i = 0; i < shown; i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c >= 0x20 && c <= 0x7e) {
                        b.append(c);
                    } else {
                        b.append(String.format("\\u%04x", (int) c));
                    }
                }
            }
        }
        if (s.length() > shown) {
            b.append(CUT);
        }
        return b.append('"').toString();
    }

    private static void requireRoomForTheCut(int max) {
        if (max <= CUT.length()) {
            throw new IllegalArgumentException("max must leave room for '" + CUT + "' (more than " + CUT.length() + "), was " + max);
        }
    }
}
