package dev.airlock.core;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The host's {@code /etc} files that a system image (the host's {@code /usr}) takes, the same on
 * every tier: what programs need and what holds no secrets. The alternatives links (java,
 * editor...), the dynamic linker cache, CA certificates, per-package configuration that {@code /usr}
 * links into (a JDK's conf/security, Python's), matplotlib's defaults (Debian's matplotlib reads
 * {@code /etc/matplotlibrc}) and fontconfig's (anything that draws text reads {@code /etc/fonts}).
 * Never passwd, shadow, resolv.conf, hosts or ssl/private.
 */
public final class HostEtc {

    private static final List<String> NAMES = List.of(
            "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ssl/certs", "ca-certificates",
            "mime.types", "os-release", "debian_version", "localtime", "matplotlibrc", "fonts");
    /** Directories whose name starts so: one per package (java-17-openjdk, python3.11). */
    private static final List<String> PREFIXES = List.of("java-", "python3");

    private HostEtc() {
    }

    /** The names under {@code hostEtc} to take (each may be missing on a host: the caller skips those). */
    public static List<String> names(Path hostEtc) throws IOException {
        List<String> names = new ArrayList<>(NAMES);
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(hostEtc)) {
            for (Path entry : entries) {
                String name = entry.getFileName().toString();
                if (PREFIXES.stream().anyMatch(name::startsWith) && Files.isDirectory(entry, LinkOption.NOFOLLOW_LINKS)) {
                    names.add(name);
                }
            }
        }
        return names;
    }
}
