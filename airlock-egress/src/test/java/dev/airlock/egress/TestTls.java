package dev.airlock.egress;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.concurrent.TimeUnit;

/**
 * A certificate for {@code test.example} made at test time with the JDK's keytool: self-signed, so
 * it is its own CA. Clients trust exactly it.
 */
public final class TestTls {

    public static final String PASSWORD = "changeit";
    public final Path keyStore;
    public final Path caPem;

    private TestTls(Path keyStore, Path caPem) {
        this.keyStore = keyStore;
        this.caPem = caPem;
    }

    public static TestTls create(Path dir, String... names) throws Exception {
        Path ks = dir.resolve("server.p12");
        Path pem = dir.resolve("ca.pem");
        StringBuilder san = new StringBuilder("SAN=");
        for (String n : names) {
            san.append(san.length() > 4 ? "," : "").append("dns:").append(n);
        }
        String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
        run(keytool, "-genkeypair", "-alias", "test", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=" + names[0],
                "-ext", san.toString(), "-ext", "BC:c=ca:true", "-validity", "2", "-keystore", ks.toString(),
                "-storetype", "PKCS12", "-storepass", PASSWORD, "-keypass", PASSWORD);
        run(keytool, "-exportcert", "-rfc", "-alias", "test", "-keystore", ks.toString(), "-storepass", PASSWORD, "-file", pem.toString());
        return new TestTls(ks, pem);
    }

    private static void run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("keytool failed: " + out);
        }
    }

    public SSLContext serverContext() throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(keyStore)) {
            ks.load(in, PASSWORD.toCharArray());
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, PASSWORD.toCharArray());
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(kmf.getKeyManagers(), null, null);
        return ctx;
    }

    public SSLContext clientContext() throws Exception {
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        try (InputStream in = Files.newInputStream(caPem)) {
            Certificate cert = CertificateFactory.getInstance("X.509").generateCertificate(in);
            trust.setCertificateEntry("ca", cert);
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx;
    }
}
