package dev.airlock.core;

import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * The name of one sandbox, unique on this host. It is also the runtime's container id, the cgroup
 * leaf name and the state directory name, so it is restricted to characters safe in all of them.
 * The prefix names the owning engine instance, so that leftovers of a crashed engine can be found
 * and reaped by label.
 */
public record SandboxId(String value) {

    private static final Pattern SAFE = Pattern.compile("al-[a-z0-9]{1,16}-[a-f0-9]{16}");
    private static final SecureRandom RANDOM = new SecureRandom();

    public SandboxId {
        if (value == null || !SAFE.matcher(value).matches()) {
            throw AirlockException.invalid("sandbox id '" + Printable.of(value) + "' is malformed: ids look like al-<owner>-<16 hex digits>");
        }
    }

    /** A fresh id owned by the engine instance named {@code owner}. */
    public static SandboxId random(String owner) {
        byte[] bytes = new byte[8];
        RANDOM.nextBytes(bytes);
        return new SandboxId("al-" + owner + "-" + HexFormat.of().formatHex(bytes));
    }

    /** Whether {@code name} is an id that the engine instance {@code owner} created. */
    public static boolean isOwnedBy(String name, String owner) {
        return name.startsWith("al-" + owner + "-") && SAFE.matcher(name).matches();
    }

    /** The engine instance that created sandbox {@code name}, or null when {@code name} is not a sandbox id. */
    public static String instanceOf(String name) {
        return name != null && SAFE.matcher(name).matches() ? name.substring(3, name.indexOf('-', 3)) : null;
    }

    public static SandboxId parse(String value) {
        return new SandboxId(value);
    }

    @Override
    public String toString() {
        return value;
    }
}
