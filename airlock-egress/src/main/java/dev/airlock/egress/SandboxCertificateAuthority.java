package dev.airlock.egress;

import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x500.X500NameBuilder;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.GeneralSubtree;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.asn1.x509.NameConstraints;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;
import java.math.BigInteger;
import java.net.Socket;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.Principal;
import java.security.SecureRandom;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Collection;
import java.util.Date;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The certificate authority of one sandbox, for TLS interception towards the hosts whose requests
 * the proxy reads (credential-bound, or held for approval). Its private key exists only in this
 * object (never on disk) and is dropped by {@link #close()}; only the public certificate is handed
 * to the sandbox. The CA is name-constrained to those hosts, so even its own key could not vouch for
 * any other name in a client that honours name constraints.
 */
final class SandboxCertificateAuthority implements AutoCloseable {

    private static final String SIGNATURE = "SHA256withECDSA";
    private static final Duration CA_VALIDITY = Duration.ofDays(366);
    private static final Duration LEAF_VALIDITY = Duration.ofDays(30);
    private static final Duration BACKDATE = Duration.ofHours(1);
    /** A wildcard credential lets the sandbox choose names: leaves are cached within a bound. */
    private static final int MAX_CACHED_LEAVES = 256;

    private final SecureRandom random = new SecureRandom();
    private final X509Certificate certificate;
    private final Map<String, X509Certificate[]> leaves = new ConcurrentHashMap<>();
    private volatile PrivateKey caKey;
    /** One key pair for all leaves: a new key per name would add nothing but cost. */
    private volatile KeyPair leafKeys;

    private SandboxCertificateAuthority(X509Certificate certificate, PrivateKey caKey, KeyPair leafKeys) {
        this.certificate = certificate;
        this.caKey = caKey;
        this.leafKeys = leafKeys;
    }

    /**
     * @param hostPatterns the names (exact or {@code *.suffix}) it may issue for; they become its
     *                     permitted DNS name constraints
     */
    static SandboxCertificateAuthority create(String sandboxId, Collection<String> hostPatterns) throws GeneralSecurityException {
        KeyPair caKeys = ecKeyPair();
        Instant now = Instant.now();
        X500Name name = new X500NameBuilder(BCStyle.INSTANCE).addRDN(BCStyle.O, "Airlock")
                .addRDN(BCStyle.CN, "Airlock sandbox " + sandboxId + " egress CA").build();
        Set<String> bases = new LinkedHashSet<>();
        for (String pattern : hostPatterns) {
            // RFC 5280: a DNS constraint covers the name and every name below it.
            bases.add(pattern.startsWith("*.") ? pattern.substring(2) : pattern);
        }
        GeneralSubtree[] permitted = bases.stream().map(b -> new GeneralSubtree(new GeneralName(GeneralName.dNSName, b)))
                .toArray(GeneralSubtree[]::new);
        try {
            JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
            X509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(name, new BigInteger(127, new SecureRandom()).add(BigInteger.ONE),
                    Date.from(now.minus(BACKDATE)), Date.from(now.plus(CA_VALIDITY)), name, caKeys.getPublic());
            b.addExtension(Extension.basicConstraints, true, new BasicConstraints(0));
            b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
            b.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(caKeys.getPublic()));
            b.addExtension(Extension.nameConstraints, true, new NameConstraints(permitted, null));
            X509Certificate ca = sign(b, caKeys.getPrivate());
            return new SandboxCertificateAuthority(ca, caKeys.getPrivate(), ecKeyPair());
        } catch (java.io.IOException | OperatorCreationException e) {
            throw new GeneralSecurityException("cannot make the sandbox's certificate authority: " + e.getMessage(), e);
        }
    }

    X509Certificate certificate() {
        return certificate;
    }

    /** The CA certificate in PEM: all the sandbox gets of it. */
    String certificatePem() {
        try {
            String body = Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(certificate.getEncoded());
            return "-----BEGIN CERTIFICATE-----\n" + body + "\n-----END CERTIFICATE-----\n";
        } catch (java.security.cert.CertificateEncodingException e) {
            throw new IllegalStateException("cannot encode the sandbox CA certificate", e);
        }
    }

    /** Leaf and CA certificate for {@code host} (a DNS name), issued on first use. */
    X509Certificate[] chainFor(String host) throws GeneralSecurityException {
        X509Certificate[] cached = leaves.get(host);
        if (cached != null && cached[0].getNotAfter().toInstant().isAfter(Instant.now().plus(Duration.ofDays(1)))) {
            return cached;
        }
        PrivateKey signer = caKey;
        KeyPair keys = leafKeys;
        if (signer == null || keys == null) {
            throw new GeneralSecurityException("the sandbox's certificate authority is closed");
        }
        Instant now = Instant.now();
        Instant notAfter = now.plus(LEAF_VALIDITY);
        if (notAfter.isAfter(certificate.getNotAfter().toInstant())) {
            notAfter = certificate.getNotAfter().toInstant();
        }
        try {
            JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
            X500Name subject = new X500NameBuilder(BCStyle.INSTANCE).addRDN(BCStyle.CN, host).build();
            X509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(certificate, new BigInteger(127, random).add(BigInteger.ONE),
                    Date.from(now.minus(BACKDATE)), Date.from(notAfter), subject, keys.getPublic());
            b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
            b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
            b.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth));
            b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName(GeneralName.dNSName, host)));
            b.addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(certificate));
            b.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(keys.getPublic()));
            X509Certificate[] chain = {sign(b, signer), certificate};
            if (leaves.size() >= MAX_CACHED_LEAVES) {
                leaves.clear();
            }
            leaves.put(host, chain);
            return chain;
        } catch (java.io.IOException | OperatorCreationException e) {
            throw new GeneralSecurityException("cannot issue a certificate for " + host + ": " + e.getMessage(), e);
        }
    }

    /**
     * Serves the leaf for the name an engine was created for ({@link SSLEngine#getPeerHost()}:
     * the proxy sets it to the CONNECT target, never to what the client's SNI claims).
     */
    X509ExtendedKeyManager keyManager() {
        return new X509ExtendedKeyManager() {
            @Override
            public String chooseEngineServerAlias(String keyType, Principal[] issuers, SSLEngine engine) {
                return keyType.startsWith("EC") && engine != null ? engine.getPeerHost() : null;
            }

            @Override
            public X509Certificate[] getCertificateChain(String alias) {
                try {
                    return chainFor(alias);
                } catch (GeneralSecurityException e) {
                    return null;
                }
            }

            @Override
            public PrivateKey getPrivateKey(String alias) {
                KeyPair keys = leafKeys;
                return keys == null ? null : keys.getPrivate();
            }

            @Override
            public String[] getServerAliases(String keyType, Principal[] issuers) {
                return null;
            }

            @Override
            public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
                return null;
            }

            @Override
            public String[] getClientAliases(String keyType, Principal[] issuers) {
                return null;
            }

            @Override
            public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
                return null;
            }
        };
    }

    /** Drops the private keys: nothing can be issued afterwards. */
    @Override
    public void close() {
        caKey = null;
        leafKeys = null;
        leaves.clear();
    }

    private static KeyPair ecKeyPair() throws GeneralSecurityException {
        KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
        g.initialize(new ECGenParameterSpec("secp256r1"));
        return g.generateKeyPair();
    }

    private static X509Certificate sign(X509v3CertificateBuilder b, PrivateKey key) throws OperatorCreationException, CertificateException {
        return new JcaX509CertificateConverter().getCertificate(b.build(new JcaContentSignerBuilder(SIGNATURE).build(key)));
    }
}
