package dev.airlock.server;

import dev.airlock.core.AirlockException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Set;

/**
 * The API's bearer token: 256 random bits, made at first start and kept in {@code <data>/token}
 * with owner-only permissions. Comparison is constant-time.
 */
final class TokenStore {

    private final byte[] token;

    private TokenStore(String token) {
        this.token = token.getBytes(StandardCharsets.US_ASCII);
    }

    static TokenStore loadOrCreate(Path file) {
        try {
            Files.createDirectories(file.getParent());
            if (!Files.exists(file)) {
                byte[] random = new byte[32];
                new SecureRandom().nextBytes(random);
                String value = "alk_" + HexFormat.of().formatHex(random);
                try {
                    Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                    Files.writeString(file, value + "\n");
                } catch (FileAlreadyExistsException raced) {
                    // another server made it first: use theirs
                }
            }
            Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file);
            if (perms.stream().anyMatch(p -> p.name().startsWith("GROUP") || p.name().startsWith("OTHERS"))) {
                throw AirlockException.unavailable("token file " + file + " is readable by others: chmod 600 it, or delete it to make a new one");
            }
            String value = Files.readString(file).trim();
            if (value.length() < 32) {
                throw AirlockException.unavailable("token file " + file + " holds no usable token: delete it to make a new one");
            }
            return new TokenStore(value);
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot read or create the API token at " + file + ": " + e.getMessage());
        }
    }

    /** Whether an {@code Authorization} header value carries this token. */
    boolean accepts(String authorization) {
        if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return false;
        }
        byte[] offered = authorization.substring(7).trim().getBytes(StandardCharsets.US_ASCII);
        return MessageDigest.isEqual(offered, token);
    }

    String value() {
        return new String(token, StandardCharsets.US_ASCII);
    }
}
