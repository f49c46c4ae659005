package dev.airlock.server;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Engine;
import dev.airlock.core.SandboxSpec;
import dev.airlock.egress.EgressRecord;
import dev.airlock.oci.EgressSettings;
import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.policy.Policy;
import dev.airlock.server.policy.PolicyFile;
import dev.airlock.server.policy.TokenFile;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.oci.OciDriver;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The service with what it stands on (engine, state database, metrics), without any interface in
 * front of it. {@code airlock serve} puts HTTP in front of it; {@code airlock mcp} puts MCP over
 * stdio in front of it. Closing it destroys every sandbox it holds.
 */
public final class SandboxRuntime implements AutoCloseable {

    private final Engine engine;
    private final SandboxStore store;
    private final AuditLog audit;
    private final ServerMetrics metrics;
    private final SandboxService service;
    private boolean closed;
    private volatile int port;
    private String localToken;

    private SandboxRuntime(Engine engine, SandboxStore store, AuditLog audit, ServerMetrics metrics, SandboxService service) {
        this.audit = audit;
        this.engine = engine;
        this.store = store;
        this.metrics = metrics;
        this.service = service;
    }

    public static SandboxRuntime open(ServerConfig config) {
        try {
            Files.createDirectories(config.dataDir());
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot create the data directory " + config.dataDir() + ": " + e.getMessage());
        }
        // The policy first: a mistake in it must stop the start before anything runs.
        String localToken = TokenFile.loadOrCreate(config.dataDir().resolve("token"));
        Policy policy = config.policyFile() == null ? Policy.builtIn(localToken) : PolicyFile.load(config.policyFile());
        SandboxStore store = SandboxStore.open(config.dataDir().resolve("airlock.db"));
        Engine engine = null;
        AuditLog audit = null;
        try {
            audit = AuditLog.open(config.dataDir().resolve("airlock.db"));
            AuditLog auditLog = audit;
            // Every sandbox's egress proxy records into the log, and may never reach this server.
            EgressLog egressLog = new EgressLog();
            SandboxRuntime[] self = new SandboxRuntime[1];
            EgressSettings egress = EgressSettings.DEFAULTS.withListener(r -> {
                        egressLog.add(r);
                        auditLog.record(AuditRecord.EGRESS, "egress-proxy", r.sandboxId(), egressDetail(r));
                    })
                    .withServerAddresses(() -> Set.of(serverAddress(config, self[0] == null ? config.port() : self[0].port)));
            engine = new Engine(new OciDriver(config.driver(), egress), config.poolSize(), SandboxSpec.defaults());
            ServerMetrics metrics = new ServerMetrics();
            self[0] = new SandboxRuntime(engine, store, audit, metrics, new SandboxService(config, policy, engine, store, metrics, egressLog, audit));
            self[0].port = config.port();
            self[0].localToken = localToken;
            return self[0];
        } catch (RuntimeException e) {
            if (engine != null) {
                engine.close();
            }
            if (audit != null) {
                audit.close();
            }
            store.close();
            throw e;
        }
    }

    private static Map<String, Object> egressDetail(EgressRecord r) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("protocol", r.protocol());
        d.put("destination", r.destination());
        d.put("port", r.port());
        d.put("address", r.address());
        d.put("decision", r.allowed() ? "allow" : "deny");
        d.put("rule", r.rule());
        d.put("bytesUp", r.bytesUp());
        d.put("bytesDown", r.bytesDown());
        d.put("durationMs", r.duration() == null ? null : r.duration().toMillis());
        d.put("start", r.start() == null ? null : r.start().toString());
        return d;
    }

    /**
     * Where the REST API listens, for the egress rules. Port 0 (a free port chosen later) stands
     * for every port of that address: the sandboxes then reach none of them.
     */
    private static InetSocketAddress serverAddress(ServerConfig config, int port) {
        try {
            return new InetSocketAddress(InetAddress.getByName(config.host()), port);
        } catch (UnknownHostException e) {
            throw AirlockException.invalid("cannot resolve the server's host '" + config.host() + "': " + e.getMessage());
        }
    }

    /** The port the REST API is bound to, once known (configured as 0: a free one). */
    public void listeningOn(int boundPort) {
        this.port = boundPort;
    }

    /** The token in {@code <data>/token}: the built-in policy's {@code local} client's. */
    public String localToken() {
        return localToken;
    }

    public SandboxService service() {
        return service;
    }

    /** The audit log (in the state database). */
    public AuditLog audit() {
        return audit;
    }

    ServerMetrics metrics() {
        return metrics;
    }

    /** Destroys every sandbox, then releases the engine and the store. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            service.close();
            engine.close();
        } finally {
            audit.close();
            store.close();
        }
    }
}
