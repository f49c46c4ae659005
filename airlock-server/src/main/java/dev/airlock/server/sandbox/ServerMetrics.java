package dev.airlock.server.sandbox;

import dev.airlock.core.ExecResult;
import dev.airlock.server.live.MetricsHistory;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.util.Locale;

/**
 * The server's Prometheus metrics: sandboxes, executions and their latency, the warm pool,
 * refusals and egress. The console's charts ({@link MetricsHistory}) sample the same meters.
 */
public final class ServerMetrics {

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final Counter created = Counter.builder("airlock.sandbox.creations").description("Sandboxes created").register(registry);
    private final Counter destroyed = Counter.builder("airlock.sandbox.destructions").description("Sandboxes destroyed").register(registry);
    private final Timer execLatency = Timer.builder("airlock.exec").description("Executions, by how they ended")
            .publishPercentileHistogram(false).register(registry);

    private final Counter refusals = Counter.builder("airlock.refusals")
            .description("Requests a control refused, and connection attempts the egress proxy refused").register(registry);
    private final Counter egressBytes = Counter.builder("airlock.egress.bytes")
            .description("Bytes through the egress proxies, both ways, counted as each connection ends").register(registry);
    private volatile Gauge sandboxes;

    void bind(SandboxService service) {
        sandboxes = Gauge.builder("airlock.sandboxes", service, SandboxService::size).tag("state", "running")
                .description("Sandboxes held by the server").register(registry);
        Gauge.builder("airlock.pool.ready", service, s -> s.tiers().warmPoolReady())
                .description("Warm-pool sandboxes ready to hand out").register(registry);
        Gauge.builder("airlock.sandboxes.tearing.down", service, s -> s.tiers().tearingDown())
                .description("Destroyed sandboxes whose teardown (the runtime's delete, mounts, directories) runs on").register(registry);
    }

    void sandboxCreated() {
        created.increment();
    }

    void sandboxDestroyed() {
        destroyed.increment();
    }

    void execEnded(ExecResult r) {
        execLatency.record(r.duration());
        Counter.builder("airlock.exec.results").tag("end_reason", r.endReason().name().toLowerCase(Locale.ROOT))
                .description("Executions by how they ended").register(registry).increment();
    }

    /** A request refused by a control (the grant, a profile's ceiling, a quota...), or an egress attempt refused. */
    void refused() {
        refusals.increment();
    }

    /** One ended egress connection (or refused attempt): its bytes, and a refusal when it was not allowed. */
    public void egress(dev.airlock.egress.EgressRecord r) {
        egressBytes.increment(r.bytesUp() + r.bytesDown());
        if (!r.allowed()) {
            refused();
        }
    }

    /** The meters the console's charts follow, read now: the same numbers /metrics shows. */
    MetricsHistory.Reading read() {
        Gauge g = sandboxes;
        return new MetricsHistory.Reading(g == null ? 0 : (long) g.value(), execLatency.count(), (long) refusals.count(), (long) egressBytes.count());
    }

    String scrape() {
        return registry.scrape();
    }
}
