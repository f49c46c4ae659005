package dev.airlock.egress;

import dev.airlock.core.Credential;
import dev.airlock.core.NetworkPolicy.Destination;

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
 * The sandbox's credentials and what injecting them takes: which credentials a destination is
 * bound to, the sandbox's certificate authority to terminate its TLS, and the trust that verifies
 * the real host before a secret is sent to it.
 */
final class CredentialBroker implements AutoCloseable {

    private static final String[] HTTP_1_1 = {"http/1.1"};

    private final List<Credential> credentials;
    private final SandboxCertificateAuthority ca;
    private final SSLContext sandboxSide;
    private final SSLContext upstream;

    private CredentialBroker(List<Credential> credentials, SandboxCertificateAuthority ca, SSLContext sandboxSide, SSLContext upstream) {
        this.credentials = credentials;
        this.ca = ca;
        this.sandboxSide = sandboxSide;
        this.upstream = upstream;
    }

    /** @param upstream verifies upstream servers; null for the JVM's default trust */
    static CredentialBroker create(String sandboxId, List<Credential> credentials, SSLContext upstream) throws GeneralSecurityException {
        Set<String> hosts = new LinkedHashSet<>();
        credentials.forEach(c -> c.destinations().forEach(d -> hosts.add(d.host())));
        SandboxCertificateAuthority ca = SandboxCertificateAuthority.create(sandboxId, hosts);
        SSLContext sandboxSide = SSLContext.getInstance("TLS");
        sandboxSide.init(new KeyManager[] {ca.keyManager()}, null, null);
        return new CredentialBroker(List.copyOf(credentials), ca, sandboxSide, upstream != null ? upstream : SSLContext.getDefault());
    }

    SandboxCertificateAuthority certificateAuthority() {
        return ca;
    }

    /**
     * The credentials bound to {@code destination} (a normalized name; an IP literal matches
     * none) on {@code port}. When two fill the same header, the first in the spec wins.
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
