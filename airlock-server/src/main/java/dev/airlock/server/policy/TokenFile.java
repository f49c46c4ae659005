package dev.airlock.server.policy;

import dev.airlock.core.AirlockException;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Set;

/**
 * A bearer token kept in a file only its owner may read: the built-in {@code local} client's
 * {@code <data>/token}, made at first start, or a policy client's {@code tokenFile}.
 */
public final class TokenFile {

    private TokenFile() {
    }

    /** A new random token: 256 bits, {@code alk_} and hex. */
    public static String newToken() {
        byte[] random = new byte[32];
        new SecureRandom().nextBytes(random);
        return "alk_" + HexFormat.of().formatHex(random);
    }

    /** Reads {@code file}, making it with a new token first if it does not exist. */
    public static String loadOrCreate(Path file) {
        try {
            Files.createDirectories(file.getParent());
            if (!Files.exists(file)) {
                try {
                    Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                    Files.writeString(file, newToken() + "\n");
                } catch (FileAlreadyExistsException raced) {
                    // another server made it first: use theirs
                }
            }
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot create the API token at " + file + ": " + e.getMessage());
        }
        return read(file);
    }

    /** Reads a token file, refusing one that others may read. */
    public static String read(Path file) {
        try {
            Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file);
            if (perms.stream().anyMatch(p -> p.name().startsWith("GROUP") || p.name().startsWith("OTHERS"))) {
                throw AirlockException.unavailable("token file " + file + " is readable by others: chmod 600 it, or delete it to make a new one");
            }
            String value = Files.readString(file).trim();
            if (value.length() < 32) {
                throw AirlockException.unavailable("token file " + file + " holds no usable token (at least 32 characters): delete it to make a new one");
            }
            return value;
        } catch (java.nio.file.NoSuchFileException e) {
            throw AirlockException.unavailable("there is no token file at " + file + ": the server makes it when it first starts with"
                    + " that data directory; start it, or name the token file of the server you mean");
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot read the token file " + file + ": " + e.getMessage());
        }
    }
}
