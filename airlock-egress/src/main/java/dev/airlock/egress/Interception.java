package dev.airlock.egress;

import dev.airlock.core.Credential;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.RequestApproval;

import javax.net.ssl.KeyManager;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import java.io.IOException;
import java.net.Socket;
import java.security.GeneralSecurityException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * What the proxy needs to read a sandbox's HTTP requests to some destinations: which destinations
 * (those a credential is bound to, and those a request approval inspects), the credentials to inject
 * and the requests to hold for approval there, the sandbox's certificate authority to terminate its
 * TLS, and the trust that verifies the real host before anything is sent to it.
 */
final class Interception implements AutoCloseable {

    private static final String[] HTTP_1_1 = {"http/1.1"};

    private final List<Credential> credentials;
    private final List<RequestApproval> approvals;
    private final SandboxCertificateAuthority ca;
    private final SSLContext sandboxSide;
    private final SSLContext upstream;

    private Interception(List<Credential> credentials, List<RequestApproval> approvals, SandboxCertificateAuthority ca, SSLContext sandboxSide,
                         SSLContext upstream) {
        this.credentials = credentials;
        this.approvals = approvals;
        this.ca = ca;
        this.sandboxSide = sandboxSide;
        this.upstream = upstream;
    }

    /**
     * Null when there is nothing to intercept (no credential and no request approval).
     *
     * @param upstream verifies upstream servers; null for the JVM's default trust
     */
    static Interception create(String sandboxId, List<Credential> credentials, List<RequestApproval> approvals, SSLContext upstream)
            throws GeneralSecurityException {
        if (credentials.isEmpty() && approvals.isEmpty()) {
            return null;
        }
        Set<String> hosts = new LinkedHashSet<>();
        credentials.forEach(c -> c.destinations().forEach(d -> hosts.add(d.host())));
        approvals.forEach(a -> a.destinations().forEach(d -> hosts.add(d.host())));
        SandboxCertificateAuthority ca = SandboxCertificateAuthority.create(sandboxId, hosts);
        SSLContext sandboxSide = SSLContext.getInstance("TLS");
        sandboxSide.init(new KeyManager[] {ca.keyManager()}, null, null);
        return new Interception(List.copyOf(credentials), List.copyOf(approvals), ca, sandboxSide,
                upstream != null ? upstream : SSLContext.getDefault());
    }

    SandboxCertificateAuthority certificateAuthority() {
        return ca;
    }

    /**
     * Whether connections to {@code destination} (a normalized name; an IP literal matches none) on
     * {@code port} are read request by request rather than relayed.
     */
    boolean inspects(String destination, int port) {
        return !boundTo(destination, port).isEmpty() || approvals.stream().anyMatch(a -> a.inspects(destination, port));
    }

    /**
     * The credentials bound to {@code destination} on {@code port}. When two fill the same header,
     * the first in the spec wins.
     */
    List<Credential> boundTo(String destination, int port) {
        List<Credential> out = new ArrayList<>();
        Set<String> headers = new HashSet<>();
        for (Credential c : credentials) {
            for (Destination d : c.destinations()) {
                if (d.matchesName(destination) && (d.anyPort() || d.ports().contains(port))) {
                    if (headers.add(c.header().toLowerCase(Locale.ROOT))) {
                        out.add(c);
                    }
                    break;
                }
            }
        }
        return out;
    }

    /**
     * The method a request approval holds a request for, or null when none covers it. {@code
     * methods} are the methods the request may act as (its own, then any an override header names);
     * a covered override is preferred, since that is what a server honouring it would do.
     */
    String approvalFor(List<String> methods, String destination, int port) {
        String covered = null;
        for (String m : methods) {
            if (approvals.stream().anyMatch(a -> a.covers(m, destination, port))) {
                covered = m;
            }
        }
        return covered;
    }

    /** The server end for the sandbox: a leaf for {@code host}, whatever SNI the client sends; HTTP/1.1 only. */
    SSLEngine sandboxEngine(String host, int port) {
        SSLEngine engine = sandboxSide.createSSLEngine(host, port);
        engine.setUseClientMode(false);
        SSLParameters p = engine.getSSLParameters();
        p.setApplicationProtocols(HTTP_1_1);
        p.setNeedClientAuth(false);
        engine.setSSLParameters(p);
        return engine;
    }

    /**
     * TLS to the real host over the connected {@code socket}, its certificate and name verified
     * before this returns; HTTP/1.1 only.
     */
    SSLSocket connectUpstream(Socket socket, String host, int port) throws IOException {
        SSLSocket tls = (SSLSocket) upstream.getSocketFactory().createSocket(socket, host, port, true);
        SSLParameters p = tls.getSSLParameters();
        p.setEndpointIdentificationAlgorithm("HTTPS");
        p.setApplicationProtocols(HTTP_1_1);
        p.setServerNames(List.of(new SNIHostName(host)));
        tls.setSSLParameters(p);
        tls.startHandshake();
        return tls;
    }

    @Override
    public void close() {
        ca.close();
    }
}
