package dev.airlock.client;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;

/**
 * A snapshot of one sandbox as the server described it: state, effective limits, labels and
 * lifetime. Returned by {@link Airlock#list()}, {@link RemoteSandbox#info()} and
 * {@link RemoteSandbox#extendTtl(Duration)}; it does not change by itself, ask again for news.
 *
 * @param id             the sandbox id, such as {@code al-ab12cd34-0123456789abcdef}
 * @param state          the server's state name, such as {@code running}
 * @param expiresAt      when the server destroys it regardless of activity
 * @param idleTimeout    how long without a request before it is destroyed earlier
 * @param lastActivityAt the last request that touched it
 * @param ports          the preview ports its profile names ({@link RemoteSandbox#previewLink(int)}); empty when none
 */
public record SandboxInfo(
        String id,
        String state,
        String image,
        EffectiveLimits limits,
        Map<String, String> env,
        Map<String, String> labels,
        Instant createdAt,
        Instant expiresAt,
        Duration idleTimeout,
        Instant lastActivityAt,
        java.util.List<Integer> ports) {

    public SandboxInfo {
        Objects.requireNonNull(id, "id");
        env = env == null ? Map.of() : Map.copyOf(env);
        labels = labels == null ? Map.of() : Map.copyOf(labels);
        ports = ports == null ? java.util.List.of() : java.util.List.copyOf(ports);
    }

    public boolean running() {
        return "running".equals(state);
    }

    /** Whether it is paused: its processes frozen until it is resumed. */
    public boolean paused() {
        return "paused".equals(state);
    }
}
