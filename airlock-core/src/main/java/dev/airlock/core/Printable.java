package dev.airlock.core;

/** Untrusted text made safe to put in a message or a log line: printable ASCII only, cut short. */
public final class Printable {

    private Printable() {
    }

    /** {@code s} cut to 64 characters, with anything but printable ASCII as '?'; "null" for null. */
    public static String of(String s) {
        return of(s, 64);
    }

    /** {@code s} cut to {@code max} characters, with anything but printable ASCII as '?'; "null" for null. */
    public static String of(String s, int max) {
        if (s == null) {
            return "null";
        }
        String cut = s.length() > max ? s.substring(0, max) + "..." : s;
        return cut.replaceAll("[^\\x20-\\x7e]", "?");
    }
}
