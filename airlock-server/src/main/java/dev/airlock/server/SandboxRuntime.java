package dev.airlock.server;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Input;
import dev.airlock.egress.EgressBroker;
import dev.airlock.egress.EgressProxy;
import dev.airlock.egress.EgressRecord;
import dev.airlock.egress.EgressSettings;
import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.audit.AuditSettings;
import dev.airlock.server.cluster.ClusterMembership;
import dev.airlock.server.config.ServerConfig;
import dev.airlock.server.live.EgressLog;
import dev.airlock.server.live.Tiers;
import dev.airlock.server.policy.Policy;
import dev.airlock.server.policy.PolicyFile;
import dev.airlock.server.policy.Profile;
import dev.airlock.server.policy.TokenFile;
import dev.airlock.server.sandbox.SandboxService;
import dev.airlock.server.sandbox.ServerMetrics;
import dev.airlock.server.store.SandboxStore;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/**
 * The service with what it stands on (engine, state database, metrics), without any interface in
 * front of it. {@code airlock serve} puts HTTP in front of it; {@code airlock mcp} puts MCP over
 * stdio in front of it. It chooses the isolation drivers by name ({@link Tiers}: one per tier its policy uses) and owns
 * the egress broker that serves every sandbox's network, credentials and request approvals.
 * Closing it destroys every sandbox it holds.
 */
public final class SandboxRuntime implements AutoCloseable {

    private final Tiers tiers;
    private final SandboxStore store;
    private final AuditLog audit;
    private final ServerMetrics metrics;
    private final SandboxService service;
    /** The REST API's port, once known: the egress broker keeps sandboxes away from it. */
    private final AtomicInteger port;
    private final String localToken;
    /** This server's membership of a cluster; null when it runs alone. */
    private final ClusterMembership cluster;
    private boolean closed;

    private SandboxRuntime(Tiers tiers, SandboxStore store, AuditLog audit, ServerMetrics metrics, SandboxService service,
                           AtomicInteger port, String localToken, ClusterMembership cluster) {
        this.cluster = cluster;
        this.audit = audit;
        this.tiers = tiers;
        this.store = store;
        this.metrics = metrics;
        this.service = service;
        this.port = port;
        this.localToken = localToken;
    }

    public static SandboxRuntime open(ServerConfig config) {
        DataDirectory.prepare(config.dataDir());
        // The policy first: a mistake in it must stop the start before anything runs.
        String localToken = TokenFile.loadOrCreate(config.dataDir().resolve("token"));
        Policy policy = config.policyFile() == null ? Policy.builtIn(localToken) : PolicyFile.load(config.policyFile());
        refuseInputsTouching(policy, config.dataDir());
        // A CA file that cannot be used stops the start too, not the first credential-bound request.
        SSLContext upstreamTls = upstreamTls(config.egressCa());
        // an older database brought to this Airlock's layout, a newer one refused, before anything reads it
        dev.airlock.server.store.DataSchema.migrate(config.database());
        SandboxStore store = SandboxStore.open(config.database());
        Tiers tiers = null;
        AuditLog audit = null;
        ClusterMembership cluster = null;
        try {
            audit = AuditLog.open(config.database(), AuditSettings.fromEnvironment(System.getenv()));
            AuditLog auditLog = audit;
            // Every sandbox's egress proxy records into the log, and may never reach this server.
            EgressLog egressLog = new EgressLog();
            ServerMetrics metrics = new ServerMetrics();
            AtomicInteger port = new AtomicInteger(config.port());
            EgressSettings egress = EgressSettings.DEFAULTS.withOptions(EgressProxy.Options.DEFAULTS.withUpstreamTls(upstreamTls)
                            // the proxy's own limit on a held request stays above the policy's, which decides first
                            .withApprovalTimeout(policy.approvalTimeout().plusMinutes(1)))
                    .withListener(r -> {
                        egressLog.add(r);
                        metrics.egress(r);
                        recordEgress(auditLog, r);
                    })
                    .withServerAddresses(() -> Set.of(serverAddress(config, port.get())));
            EgressBroker broker = new EgressBroker(egress);
            // The data directory (token, state, outputs) is kept from every input.
            tiers = Tiers.open(policy, config.driver().protecting(config.dataDir()), broker, config.poolSize());
            // a node of a cluster joins before it serves: a database it cannot reach, another secret or a taken name stop the start
            cluster = config.cluster() == null ? null : ClusterMembership.join(config.cluster(),
                    tiers.all().stream().map(e -> e.driver().isolation().id()).distinct().toList(),
                    config.maxSandboxes());
            if (cluster != null) {
                cluster.anchorAudit(audit);
            }
            SandboxService service = new SandboxService(config, policy, tiers, store, metrics, egressLog, audit, cluster);
            // a request a profile's approveRequests covers waits for a person, asked through the service
            broker.decideRequestsWith(service::approveRequest);
            return new SandboxRuntime(tiers, store, audit, metrics, service, port, localToken, cluster);
        } catch (RuntimeException e) {
            if (cluster != null) {
                cluster.close();
            }
            if (tiers != null) {
                tiers.close();
            }
            if (audit != null) {
                audit.close();
            }
            store.close();
            throw e;
        }
    }

    /**
     * Refuses, at start, a policy whose input is, lies in or contains the data directory, as named
     * and as its links resolve now. The driver checks again at each creation (a link may change
     * later), along with everything else no input may touch.
     */
    static void refuseInputsTouching(Policy policy, Path dataDir) {
        Set<Path> data = realAndNamed(dataDir);
        for (Profile p : policy.profiles().values()) {
            for (Input input : p.inputs()) {
                for (Path named : realAndNamed(input.hostPath())) {
                    for (Path d : data) {
                        if (named.startsWith(d) || d.startsWith(named)) {
                            throw AirlockException.invalid("input '" + input.name() + "' (" + input.hostPath() + ") of profile '" + p.name()
                                    + "' " + (named.startsWith(d) ? (named.equals(d) ? "is" : "lies inside") : "contains")
                                    + " the server's data directory " + dataDir + " (its token, state database and outputs), which no"
                                    + " sandbox may see (rule " + p.rule("inputs") + "): name a directory outside it");
                        }
                    }
                }
            }
        }
    }

    private static Set<Path> realAndNamed(Path p) {
        Set<Path> out = new LinkedHashSet<>();
        Path abs = p.toAbsolutePath().normalize();
        out.add(abs);
        try {
            out.add(abs.toRealPath());
        } catch (IOException e) {
            // not there (yet): its named form is checked, and the driver checks again at creation
        }
        return out;
    }

    /**
     * The trust for upstream servers of credential-bound HTTPS: the JVM's CAs plus those of {@code
     * pem}; null (the JVM's default) when no file is given.
     */
    static SSLContext upstreamTls(Path pem) {
        if (pem == null) {
            return null;
        }
        String what = "egress CA file " + pem;
        Collection<? extends Certificate> extra;
        try (InputStream in = Files.newInputStream(pem)) {
            extra = CertificateFactory.getInstance("X.509").generateCertificates(in);
        } catch (IOException e) {
            throw AirlockException.invalid(what + " cannot be read (" + e.getClass().getSimpleName() + "): give a readable PEM file of CA"
                    + " certificates, or leave out --egress-ca");
        } catch (CertificateException e) {
            throw AirlockException.invalid(what + " does not hold PEM certificates (" + e.getMessage() + "): give a file of"
                    + " '-----BEGIN CERTIFICATE-----' blocks");
        }
        if (extra.isEmpty()) {
            throw AirlockException.invalid(what + " holds no certificate: give a file of '-----BEGIN CERTIFICATE-----' blocks");
        }
        try {
            KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
            trust.load(null, null);
            int i = 0;
            TrustManagerFactory jvm = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            jvm.init((KeyStore) null);
            for (TrustManager tm : jvm.getTrustManagers()) {
                if (tm instanceof X509TrustManager x) {
                    for (X509Certificate c : x.getAcceptedIssuers()) {
                        trust.setCertificateEntry("jvm-" + i++, c);
                    }
                }
            }
            for (Certificate c : extra) {
                trust.setCertificateEntry("egress-ca-" + i++, c);
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trust);
            SSLContext tls = SSLContext.getInstance("TLS");
            tls.init(null, tmf.getTrustManagers(), null);
            return tls;
        } catch (GeneralSecurityException | IOException e) {
            throw AirlockException.invalid(what + " cannot be used as trust for upstream servers: " + e.getMessage());
        }
    }

    /**
     * An allowed connection is recorded each time; a refused one is folded per sandbox and window
     * (sandboxed code can try thousands a second): the first in full, the rest counted, with their
     * distinct destinations among the samples (docs/audit.md).
     */
    private static void recordEgress(AuditLog log, EgressRecord r) {
        if (!r.allowed()) {
            Map<String, Object> base = new LinkedHashMap<>();
            base.put("decision", "deny");
            String sample = r.destination() + ":" + r.port() + " (" + r.rule() + ")";
            if (!log.admitRepeat("sandbox " + r.sandboxId(), AuditRecord.EGRESS, "egress-proxy", r.sandboxId(), base, sample)) {
                return;
            }
        }
        log.record(AuditRecord.EGRESS, "egress-proxy", r.sandboxId(), egressDetail(r));
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
        d.put("credentials", r.credentials());
        d.put("approval", r.approval());
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

    /**
     * The REST API is bound to {@code api} (its port configured as 0: a free one, now known); a node
     * of a cluster publishes it with its peer port's address and certificate fingerprint (null alone),
     * which makes the node {@code up}.
     */
    public void listeningOn(java.net.URI api, String peerAddress, String fingerprint) {
        port.set(api.getPort());
        if (cluster != null) {
            cluster.serving(api.toString(), peerAddress, fingerprint, service::size);
        }
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

    /** Destroys every sandbox, then releases the engines and the store. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            service.close();
            tiers.close();
        } finally {
            if (cluster != null) {
                // the node's last records written first, so that the head it publishes as it leaves is its last
                try {
                    audit.flush(5000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                cluster.close();
            }
            audit.close();
            store.close();
        }
    }
}
