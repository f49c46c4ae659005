package dev.airlock.client;

import java.util.Locale;

/** What a path in a sandbox is. Symlinks are reported, never followed, by stat and list. */
public enum FileType {
    FILE, DIRECTORY, SYMLINK, OTHER;

    static FileType fromWire(String s) {
        try {
            return s == null ? OTHER : valueOf(s.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            return OTHER;
        }
    }
}
