package dev.airlock.core;

import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Which isolation driver to start, and its settings, in a form the server can hold without
 * depending on any driver module: the driver's name ({@link DriverProvider#name()}) and its own
 * options as text, which its provider parses (and refuses, naming what it knows, when it does not
 * understand them).
 *
 * @param driver         the provider's name, such as {@code oci}
 * @param options        the driver's own settings, such as {@code runtime=runsc}; empty: its defaults
 * @param protectedPaths host directories no input may be, lie in or contain (the server's data
 *                       directory, say), beyond those the driver protects on its own
 */
public record DriverSettings(String driver, Map<String, String> options, Set<Path> protectedPaths) {

    public DriverSettings {
        if (driver == null || driver.isBlank()) {
            throw AirlockException.invalid("no isolation driver named: give one, such as 'oci'");
        }
        options = options == null ? Map.of() : Map.copyOf(new TreeMap<>(options));
        protectedPaths = protectedPaths == null ? Set.of() : Set.copyOf(protectedPaths);
    }

    /** The driver {@code driver} with its defaults. */
    public static DriverSettings of(String driver) {
        return new DriverSettings(driver, Map.of(), Set.of());
    }

    /** These settings with {@code path} protected too (see {@code protectedPaths}). */
    public DriverSettings protecting(Path path) {
        Set<Path> paths = new java.util.HashSet<>(protectedPaths);
        paths.add(path);
        return new DriverSettings(driver, options, paths);
    }
}
