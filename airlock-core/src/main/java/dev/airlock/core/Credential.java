package dev.airlock.core;

import java.util.List;
import java.util.regex.Pattern;

/**
 * A secret bound to destinations: the egress proxy sets header {@code header} to {@code value} on
 * requests to these destinations only (HTTPS through TLS interception with the sandbox's own
 * certificate authority). Code in the sandbox never sees the value.
 *
 * @param name         how policies and records name it, such as {@code github}
 * @param destinations where it may be sent (names and ports, as in {@link NetworkPolicy})
 * @param header       the request header it fills, such as {@code Authorization}
 * @param value        the header's whole value, such as {@code Bearer ghp_...}
 */
public record Credential(String name, List<NetworkPolicy.Destination> destinations, String header, Secret value) {

    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");
    private static final Pattern HEADER = Pattern.compile("[A-Za-z0-9-]{1,64}");

    public Credential {
        if (name == null || !NAME.matcher(name).matches()) {
            throw AirlockException.invalid("credential name '" + Printable.of(name) + "' is not valid: use a-z, 0-9, _ and -");
        }
        if (destinations == null || destinations.isEmpty()) {
            throw AirlockException.invalid("credential '" + name + "' is bound to no destination: name at least one");
        }
        destinations = List.copyOf(destinations);
        if (header == null || !HEADER.matcher(header).matches()) {
            throw AirlockException.invalid("credential '" + name + "': header '" + Printable.of(header) + "' is not a valid header name");
        }
        if (value == null) {
            throw AirlockException.invalid("credential '" + name + "' has no value");
        }
    }
}
