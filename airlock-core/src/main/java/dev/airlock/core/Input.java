package dev.airlock.core;

import java.nio.file.Path;
import java.util.regex.Pattern;

/**
 * A host file or directory shown read-only inside the sandbox at {@code /inputs/<name>}. Only
 * the operator's policy names inputs; a client picks a profile, never a host path.
 */
public record Input(String name, Path hostPath) {

    /** Where inputs appear inside the sandbox. */
    public static final String MOUNT_ROOT = "/inputs";
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");

    public Input {
        if (name == null || !NAME.matcher(name).matches() || name.equals("..")) {
            throw AirlockException.invalid("input name '" + Printable.of(name) + "' is not valid: use letters, digits, '.', '_' and '-'");
        }
        if (hostPath == null || !hostPath.isAbsolute()) {
            throw AirlockException.invalid("input '" + name + "': the host path must be absolute, got " + hostPath);
        }
        hostPath = hostPath.normalize();
    }

    /** The path inside the sandbox. */
    public String sandboxPath() {
        return MOUNT_ROOT + "/" + name;
    }
}
