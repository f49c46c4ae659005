package dev.airlock.server;

import dev.airlock.core.ExecResult;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.util.Locale;

/** The server's Prometheus metrics: sandboxes, executions and their latency, the warm pool. */
final class ServerMetrics {

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final Counter created = Counter.builder("airlock.sandbox.creations").description("Sandboxes created").register(registry);
    private final Counter destroyed = Counter.builder("airlock.sandbox.destructions").description("Sandboxes destroyed").register(registry);
    private final Timer execLatency = Timer.builder("airlock.exec").description("Executions, by how they ended")
            .publishPercentileHistogram(false).register(registry);

    void bind(SandboxService service) {
        Gauge.builder("airlock.sandboxes", service, SandboxService::size).tag("state", "running")
                .description("Sandboxes held by the server").register(registry);
        Gauge.builder("airlock.pool.ready", service, s -> s.tiers().warmPoolReady())
                .description("Warm-pool sandboxes ready to hand out").register(registry);
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

    String scrape() {
        return registry.scrape();
    }
}
