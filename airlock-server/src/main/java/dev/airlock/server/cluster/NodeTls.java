package dev.airlock.server.cluster;

import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x500.X500NameBuilder;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.eclipse.jetty.util.ssl.SslContextFactory;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509ExtendedTrustManager;
import java.io.IOException;
import java.math.BigInteger;
import java.net.Socket;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.HexFormat;

/**
 * A node's TLS identity for the calls between nodes (docs/cluster.md, "Between nodes"): a key made
 * at start that never leaves the process, and a self-signed certificate whose SHA-256 fingerprint
 * the node publishes in the cluster's database. A peer is trusted by that fingerprint alone, pinned
 * (no certificate authority, no host name: a certificate that is not the published one is refused,
 * whatever name it carries), and must still prove the cluster's secret on every call.
 */
public final class NodeTls {

    private static final Duration VALIDITY = Duration.ofDays(3650);
    private static final Duration BACKDATE = Duration.ofHours(1);

    private final KeyPair keys;
    private final X509Certificate certificate;
    private final String fingerprint;

    private NodeTls(KeyPair keys, X509Certificate certificate) {
        this.keys = keys;
        this.certificate = certificate;
        this.fingerprint = fingerprint(certificate);
    }

    /** A new key and a certificate for node {@code nodeName}. */
    public static NodeTls create(String nodeName) {
        try {
            KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
            g.initialize(new ECGenParameterSpec("secp256r1"));
            KeyPair keys = g.generateKeyPair();
            Instant now = Instant.now();
            X500Name name = new X500NameBuilder(BCStyle.INSTANCE).addRDN(BCStyle.O, "Airlock")
                    .addRDN(BCStyle.CN, "Airlock cluster node " + nodeName).build();
            var b = new JcaX509v3CertificateBuilder(name, new BigInteger(127, new SecureRandom()).add(BigInteger.ONE),
                    Date.from(now.minus(BACKDATE)), Date.from(now.plus(VALIDITY)), name, keys.getPublic());
            b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
            b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
            b.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth));
            X509Certificate cert = new JcaX509CertificateConverter()
                    .getCertificate(b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(keys.getPrivate())));
            return new NodeTls(keys, cert);
        } catch (GeneralSecurityException | IOException | OperatorCreationException e) {
            throw new IllegalStateException("cannot make this node's TLS key and certificate: " + e.getMessage(), e);
        }
    }

    /** The SHA-256 of the certificate's DER encoding, in lower-case hex: what the node publishes and its peers pin. */
    public String fingerprint() {
        return fingerprint;
    }

    static String fingerprint(X509Certificate c) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(c.getEncoded()));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The server side of the node's peer port: this key and certificate, TLS 1.3 only. */
    public SslContextFactory.Server serverContext() {
        return dev.airlock.server.http.ApiTls.serverContext(keys.getPrivate(), java.util.List.of(certificate), "TLSv1.3");
    }

    /**
     * A client context that trusts exactly one certificate: the one whose fingerprint is {@code
     * pinned}. Any other (another node's, a self-signed one of an impostor, one a public authority
     * signed) fails the handshake before a byte of the request is sent.
     */
    public static SSLContext pinnedClient(String pinned) {
        try {
            SSLContext ctx = SSLContext.getInstance("TLSv1.3");
            ctx.init(null, new TrustManager[] {new Pinned(pinned)}, new SecureRandom());
            return ctx;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot make a TLS client: " + e.getMessage(), e);
        }
    }

    /**
     * Trusts the one pinned certificate. An extended trust manager, so the JDK asks it alone (and
     * checks no host name: the pin is stronger, and peers are reached by address).
     */
    private static final class Pinned extends X509ExtendedTrustManager {
        private final String pinned;

        Pinned(String pinned) {
            this.pinned = pinned;
        }

        private void check(X509Certificate[] chain) throws CertificateException {
            if (chain == null || chain.length == 0) {
                throw new CertificateException("the peer sent no certificate");
            }
            String got = fingerprint(chain[0]);
            if (!MessageDigest.isEqual(got.getBytes(java.nio.charset.StandardCharsets.US_ASCII),
                    pinned.getBytes(java.nio.charset.StandardCharsets.US_ASCII))) {
                throw new CertificateException("the peer's certificate (SHA-256 " + got + ") is not the one its node published ("
                        + pinned + ")");
            }
            chain[0].checkValidity();
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            check(chain);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
            check(chain);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
            check(chain);
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            throw new CertificateException("a node's client context authenticates servers only");
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
            checkClientTrusted(chain, authType);
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
            checkClientTrusted(chain, authType);
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return new X509Certificate[0];
        }
    }
}
