package dev.airlock.core;

import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Requests the egress proxy holds until a person approves them: those with one of
 * {@code methods} to one of {@code destinations} (for example every non-GET request to a
 * payment API). HTTPS to these destinations is intercepted, like a credential's, so that the
 * proxy can see the method.
 */
public record RequestApproval(List<NetworkPolicy.Destination> destinations, Set<String> methods) {

    private static final Pattern METHOD = Pattern.compile("[A-Z]{1,16}");

    public RequestApproval {
        if (destinations == null || destinations.isEmpty()) {
            throw AirlockException.invalid("a request approval names no destination: name at least one");
        }
        destinations = List.copyOf(destinations);
        if (methods == null || methods.isEmpty()) {
            throw AirlockException.invalid("a request approval names no method: name at least one, such as POST");
        }
        methods = methods.stream().map(m -> m.toUpperCase(Locale.ROOT)).collect(Collectors.toUnmodifiableSet());
        for (String m : methods) {
            if (!METHOD.matcher(m).matches()) {
                throw AirlockException.invalid("'" + Printable.of(m) + "' is not an HTTP method");
            }
        }
    }

    /** Whether a request with {@code method} to {@code host}:{@code port} must wait for approval. */
    public boolean covers(String method, String host, int port) {
        return methods.contains(method.toUpperCase(Locale.ROOT)) && destinations.stream()
                .anyMatch(d -> NetworkPolicy.matches(d.host(), host.toLowerCase(Locale.ROOT)) && (d.ports().isEmpty() || d.ports().contains(port)));
    }

    /** Whether any request to {@code host}:{@code port} could need approval, so the connection must be inspected. */
    public boolean inspects(String host, int port) {
        return destinations.stream()
                .anyMatch(d -> NetworkPolicy.matches(d.host(), host.toLowerCase(Locale.ROOT)) && (d.ports().isEmpty() || d.ports().contains(port)));
    }
}
