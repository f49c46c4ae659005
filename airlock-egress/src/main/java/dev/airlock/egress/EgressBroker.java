package dev.airlock.egress;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Credential;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.SandboxBroker;
import dev.airlock.core.SandboxId;
import dev.airlock.core.SandboxSpec;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Serves each sandbox's egress from the host: for a sandbox whose network policy is not {@code
 * NONE}, an {@link EgressProxy} on {@link SandboxBroker#BRIDGE_SOCKET} in its run directory, which
 * decides by the policy, injects the spec's credentials and holds the requests its request
 * approvals cover until the {@link #decideRequestsWith request gate} answers; and, when the proxy
 * intercepts HTTPS, the trust bundle in the run directory with the variables that point clients at
 * it. A sandbox without network gets nothing.
 */
public final class EgressBroker implements SandboxBroker {

    /** The sandbox's CA certificate, and the host's CA bundle with it appended, in the run directory. */
    static final String CA_FILE_NAME = "airlock-ca.pem";
    static final String CA_BUNDLE_FILE_NAME = "ca-bundle.pem";
    private static final List<String> HOST_CA_BUNDLES = List.of("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
            "/etc/ssl/cert.pem");

    private final EgressSettings settings;
    private RequestGate requestGate;

    public EgressBroker(EgressSettings settings) {
        this.settings = settings;
    }

    /**
     * Sets the gate every sandbox's proxy asks, on the requesting connection's thread, before it
     * sends a request one of the sandbox's request approvals covers (see {@link RequestGate}). Set
     * once, by whoever owns the approvals (the sandbox service), after it exists; until then every
     * such request is refused, so an approval never fails open.
     *
     * @throws IllegalStateException if a gate is set already
     */
    public synchronized void decideRequestsWith(RequestGate gate) {
        if (requestGate != null) {
            throw new IllegalStateException("the egress broker's request gate is set already: set it once, where the service is wired");
        }
        requestGate = gate;
    }

    private boolean decide(String sandboxId, String method, String host, int port, String target) throws InterruptedException {
        RequestGate gate;
        synchronized (this) {
            gate = requestGate == null ? RequestGate.DENY_ALL : requestGate;
        }
        return gate.approve(sandboxId, method, host, port, target);
    }

    @Override
    public Attachment attach(SandboxId id, SandboxSpec spec, Path runDir, int sandboxHostUid) {
        if (spec.network().isNone()) {
            return Attachment.NONE;
        }
        Path socket = runDir.resolve(BRIDGE_SOCKET);
        EgressProxy proxy;
        try {
            proxy = EgressProxy.start(id.value(), socket,
                    new EgressRules(spec.network(), settings.serverAddresses().get(), settings.resolver()), settings.listener(),
                    settings.options(), spec.credentials(), spec.requestApprovals(), this::decide);
        } catch (IOException e) {
            throw new AirlockException(AirlockException.Kind.UNAVAILABLE, "cannot start the egress proxy of sandbox " + id + ": "
                    + e.getMessage(), e);
        }
        try {
            // Only the sandbox's user (and host root) may connect.
            Files.setAttribute(socket, "unix:uid", sandboxHostUid);
            Files.setAttribute(socket, "unix:gid", sandboxHostUid);
            Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-------"));
            return new ProxyAttachment(proxy, interceptionEnvironment(spec, proxy, runDir));
        } catch (IOException | RuntimeException e) {
            proxy.close();
            if (e instanceof RuntimeException re) {
                throw re;
            }
            throw new AirlockException(AirlockException.Kind.UNAVAILABLE, "cannot set up the egress of sandbox " + id + ": "
                    + e.getMessage(), e);
        }
    }

    /**
     * For a sandbox whose proxy intercepts HTTPS (it has credentials or request approvals): writes
     * the trust bundle (the host's CAs and the sandbox's own, public certificate only) into the run
     * directory and returns the variables that point common clients at it, and one {@code
     * AIRLOCK_CREDENTIAL_<NAME>} per credential that says where it is injected (never its value), and
     * {@code AIRLOCK_REQUEST_APPROVALS} ({@code POST,PUT@api.example.com:443;...}) naming the requests
     * that wait for a person. Empty otherwise: nothing changes for such a sandbox.
     */
    private static Map<String, String> interceptionEnvironment(SandboxSpec spec, EgressProxy proxy, Path runDir) throws IOException {
        Optional<String> ca = proxy.certificateAuthorityPem();
        if (ca.isEmpty()) {
            return Map.of();
        }
        String hostBundle = "";
        for (String candidate : HOST_CA_BUNDLES) {
            Path p = Path.of(candidate);
            if (Files.isRegularFile(p)) {
                hostBundle = Files.readString(p, StandardCharsets.ISO_8859_1);
                break;
            }
        }
        String separator = hostBundle.isEmpty() || hostBundle.endsWith("\n") ? "" : "\n";
        writePublic(runDir.resolve(CA_FILE_NAME), ca.get());
        writePublic(runDir.resolve(CA_BUNDLE_FILE_NAME), hostBundle + separator + ca.get());
        Map<String, String> env = new LinkedHashMap<>();
        String bundle = RUN_DIR + "/" + CA_BUNDLE_FILE_NAME;
        for (String name : List.of("SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO")) {
            env.put(name, bundle);
        }
        // Node adds these to its own built-in list rather than replacing it.
        env.put("NODE_EXTRA_CA_CERTS", RUN_DIR + "/" + CA_FILE_NAME);
        for (Credential c : spec.credentials()) {
            String key = "AIRLOCK_CREDENTIAL_" + c.name().toUpperCase(Locale.ROOT).replace('-', '_');
            String hosts = String.join(",", c.destinations().stream().map(d -> d.anyPort() ? d.host() : d.toString()).toList());
            env.merge(key, "injected-by-airlock-for:" + hosts, (a, b) -> a + "," + hosts);
        }
        // So that code (and the agent reading its output) knows why such a request waits, or gets a 403.
        if (!spec.requestApprovals().isEmpty()) {
            env.put("AIRLOCK_REQUEST_APPROVALS", String.join(";", spec.requestApprovals().stream()
                    .map(a -> String.join(",", new TreeSet<>(a.methods())) + "@" + String.join(",",
                            a.destinations().stream().map(d -> d.anyPort() ? d.host() : d.toString()).toList()))
                    .toList()));
        }
        return Map.copyOf(env);
    }

    private static void writePublic(Path file, String content) throws IOException {
        Files.writeString(file, content, StandardCharsets.ISO_8859_1);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
    }

    /** One sandbox's proxy. Credentials stay as the spec gave them: only the proxy's policy changes. */
    private static final class ProxyAttachment implements Attachment {
        private final EgressProxy proxy;
        private final Map<String, String> environment;
        private final AtomicBoolean closed = new AtomicBoolean();

        ProxyAttachment(EgressProxy proxy, Map<String, String> environment) {
            this.proxy = proxy;
            this.environment = environment;
        }

        @Override
        public boolean bridged() {
            return true;
        }

        @Override
        public Map<String, String> environment() {
            return environment;
        }

        @Override
        public void updateNetworkPolicy(NetworkPolicy policy) {
            proxy.updatePolicy(policy);
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                proxy.close();
            }
        }
    }
}
