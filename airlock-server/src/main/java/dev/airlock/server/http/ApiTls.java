package dev.airlock.server.http;

import dev.airlock.core.AirlockException;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.openssl.PEMKeyPair;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.eclipse.jetty.util.ssl.SslContextFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;

/**
 * HTTPS on the API's port (and so the console's), from a certificate chain and its key in PEM
 * files ({@code serve --tls-cert/--tls-key}): for a server reached by name from other machines.
 * The certificate's names (its DNS and IP subject alternative names) are the names the server
 * answers to: a request's Host (and a console page's Origin) may name them, besides the loopback
 * names and the bind address ({@link LocalOrigin}).
 */
public final class ApiTls {

    /** The request attribute that carries this server's public names to {@link LocalOrigin}. */
    static final String NAMES = "airlock.publicNames";
    private static final char[] IN_MEMORY = "airlock-in-memory".toCharArray();

    private final List<X509Certificate> chain;
    private final PrivateKey key;
    private final List<String> names;

    private ApiTls(List<X509Certificate> chain, PrivateKey key, List<String> names) {
        this.chain = chain;
        this.key = key;
        this.names = names;
    }

    /** Reads {@code cert} (the server's certificate first, then its intermediates) and {@code key}; refused with what is wrong. */
    public static ApiTls load(Path cert, Path key) {
        List<X509Certificate> chain = new ArrayList<>();
        try (InputStream in = Files.newInputStream(cert)) {
            for (var c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                chain.add((X509Certificate) c);
            }
        } catch (IOException | GeneralSecurityException e) {
            throw AirlockException.invalid("cannot read the TLS certificate " + cert + " (--tls-cert): " + e.getMessage()
                    + "; give a PEM file, the server's certificate first, then its intermediates");
        }
        if (chain.isEmpty()) {
            throw AirlockException.invalid("the TLS certificate file " + cert + " (--tls-cert) holds no certificate: give a PEM file");
        }
        PrivateKey privateKey;
        try (Reader r = Files.newBufferedReader(key); PEMParser pem = new PEMParser(r)) {
            Object o = pem.readObject();
            JcaPEMKeyConverter converter = new JcaPEMKeyConverter();
            privateKey = switch (o) {
                // "EC PRIVATE KEY", "RSA PRIVATE KEY" (openssl's older forms); "PRIVATE KEY" (PKCS#8)
                case PEMKeyPair pair -> pair.getPublicKeyInfo() != null ? converter.getKeyPair(pair).getPrivate()
                        : converter.getPrivateKey(pair.getPrivateKeyInfo());
                case PrivateKeyInfo info -> converter.getPrivateKey(info);
                case null, default -> throw AirlockException.invalid("the TLS key file " + key + " (--tls-key) holds no unencrypted"
                        + " private key: give a PEM file with a PRIVATE KEY (PKCS#8), an EC or an RSA PRIVATE KEY");
            };
        } catch (IOException e) {
            throw AirlockException.invalid("cannot read the TLS key " + key + " (--tls-key): " + e.getMessage());
        }
        matches(privateKey, chain.getFirst(), key, cert);
        return new ApiTls(List.copyOf(chain), privateKey, names(chain.getFirst()));
    }

    /** Refuses a key that is not the certificate's: a probe it signs must verify with the certificate's public key. */
    private static void matches(PrivateKey key, X509Certificate cert, Path keyFile, Path certFile) {
        String algorithm = key.getAlgorithm().equals("EC") ? "SHA256withECDSA" : key.getAlgorithm().equals("RSA") ? "SHA256withRSA"
                : key.getAlgorithm();
        try {
            java.security.Signature signer = java.security.Signature.getInstance(algorithm);
            signer.initSign(key);
            byte[] probe = "airlock".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
            signer.update(probe);
            byte[] signature = signer.sign();
            java.security.Signature verifier = java.security.Signature.getInstance(algorithm);
            verifier.initVerify(cert.getPublicKey());
            verifier.update(probe);
            if (verifier.verify(signature)) {
                return;
            }
        } catch (GeneralSecurityException e) {
            // not the certificate's kind of key: refused below
        }
        throw AirlockException.invalid("the TLS key " + keyFile + " (--tls-key) is not the key of the certificate " + certFile
                + " (--tls-cert): give the key the certificate was issued for");
    }

    private static List<String> names(X509Certificate c) {
        List<String> out = new ArrayList<>();
        try {
            Collection<List<?>> alt = c.getSubjectAlternativeNames();
            if (alt != null) {
                for (List<?> entry : alt) {
                    int type = (Integer) entry.get(0);
                    if (type == 2 || type == 7) {   // dNSName, iPAddress
                        String n = String.valueOf(entry.get(1)).toLowerCase(Locale.ROOT);
                        out.add(n.contains(":") ? "[" + n + "]" : n);
                    }
                }
            }
        } catch (java.security.cert.CertificateParsingException e) {
            throw AirlockException.invalid("the TLS certificate's names cannot be read: " + e.getMessage());
        }
        return List.copyOf(out);
    }

    /** The certificate's DNS names and addresses, lower-case (an IPv6 address in brackets). */
    public List<String> names() {
        return names;
    }

    /** The server side: this certificate and key, TLS 1.2 and 1.3. */
    public SslContextFactory.Server serverContext() {
        return serverContext(key, chain, "TLSv1.3", "TLSv1.2");
    }

    /**
     * A server side that serves {@code key} with {@code chain} (the server's certificate first),
     * held in memory only, speaking {@code protocols}: the one way Airlock makes one (the API's port,
     * a cluster node's peer port).
     */
    public static SslContextFactory.Server serverContext(PrivateKey key, List<X509Certificate> chain, String... protocols) {
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            store.setKeyEntry("server", key, IN_MEMORY, chain.toArray(X509Certificate[]::new));
            SslContextFactory.Server f = new SslContextFactory.Server();
            f.setKeyStore(store);
            f.setKeyStorePassword(new String(IN_MEMORY));
            f.setKeyManagerPassword(new String(IN_MEMORY));
            f.setIncludeProtocols(protocols);
            f.setSniRequired(false);   // clients reach the server by address as well as by name
            return f;
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException("cannot hold a TLS key in memory: " + e.getMessage(), e);
        }
    }

    /** Marks each request with this server's public names, for {@link LocalOrigin}. */
    public Filter namesFilter() {
        return new Filter() {
            @Override
            public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain) throws IOException, ServletException {
                request.setAttribute(NAMES, names);
                chain.doFilter(request, response);
            }
        };
    }
}
