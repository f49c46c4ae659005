package dev.airlock.client;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.Collection;

/**
 * TLS that trusts the certificates of one PEM file, and only those: for a server whose certificate
 * a private authority signed (or that signed its own), as {@code serve --tls-cert} serves it.
 */
public final class CaCertificates {

    /** The most a CA file may hold: a bundle of public authorities is about 200 KiB. */
    static final long MAX_BYTES = 1024 * 1024;

    private CaCertificates() {
    }

    /**
     * An {@link SSLContext} whose trust anchors are the certificates in {@code pemFile} (one or
     * more, PEM or DER). Throws {@link IllegalArgumentException} saying what is wrong with the file.
     */
    public static SSLContext sslContext(Path pemFile) {
        Collection<? extends Certificate> certificates;
        try {
            if (!Files.isRegularFile(pemFile)) {
                throw new IllegalArgumentException("the CA file " + pemFile + " is not a file: give the PEM file of the certificate"
                        + " authority that signed the server's certificate (or the server's certificate itself)");
            }
            if (Files.size(pemFile) > MAX_BYTES) {
                throw new IllegalArgumentException("the CA file " + pemFile + " is over " + MAX_BYTES / 1024 + " KiB: give the PEM file of"
                        + " the authority that signed the server's certificate");
            }
            try (InputStream in = Files.newInputStream(pemFile)) {
                certificates = CertificateFactory.getInstance("X.509").generateCertificates(in);
            }
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException("cannot read the CA file " + pemFile + ": " + e.getMessage(), e);
        }
        if (certificates.isEmpty()) {
            throw new IllegalArgumentException("the CA file " + pemFile + " holds no certificate: give a PEM file with"
                    + " -----BEGIN CERTIFICATE----- blocks");
        }
        try {
            KeyStore anchors = KeyStore.getInstance("PKCS12");
            anchors.load(null, null);
            int i = 0;
            for (Certificate c : certificates) {
                anchors.setCertificateEntry("ca-" + i++, c);
            }
            TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            trust.init(anchors);
            SSLContext tls = SSLContext.getInstance("TLS");
            tls.init(null, trust.getTrustManagers(), null);
            return tls;
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException("cannot trust the certificates of " + pemFile + ": " + e.getMessage(), e);
        }
    }
}
