package dev.airlock.core;

import java.util.Objects;

/**
 * A credential's value, held only on the host. It never prints: {@link #toString()} is a fixed
 * placeholder, so a secret that reaches a log line, an exception or a JSON body by mistake shows
 * nothing. Only the egress proxy calls {@link #reveal()}, to write it onto an outgoing request.
 */
public final class Secret {

    private final String value;

    public Secret(String value) {
        Objects.requireNonNull(value, "value");
        if (value.isEmpty() || value.indexOf('\r') >= 0 || value.indexOf('\n') >= 0 || value.indexOf('\0') >= 0) {
            throw AirlockException.invalid("a secret's value must be non-empty and contain no line break or NUL byte");
        }
        this.value = value;
    }

    public String reveal() {
        return value;
    }

    @Override
    public String toString() {
        return "Secret[redacted]";
    }
}
