package dev.airlock.it;

import dev.airlock.client.Airlock;
import dev.airlock.client.SandboxSpec;
import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriverConfig;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ServerConfig;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A real {@code airlock serve} in this JVM: the server on a real socket with a fresh data
 * directory, and an SDK client connected to it. Closing it closes the server — which must destroy
 * every sandbox it holds — and fails if anything of its sandboxes is left on the host.
 */
final class LiveServer implements AutoCloseable {

    static final OciDriverConfig DRIVER = OciDriverConfig.defaults();

    final AirlockServer server;
    final Airlock client;
    final Path dataDir;
    private final HttpClient http = HttpClient.newHttpClient();

    /** Every sandbox of this server has an id starting with this: {@code al-<engine instance>-}. */
    final String sandboxPrefix;

    private LiveServer(AirlockServer server, Path dataDir) {
        this.server = server;
        this.dataDir = dataDir;
        this.client = Airlock.connect(server.uri(), server.token());
        // Learn the engine instance from a throwaway sandbox, so that the leak check after the
        // class sees only this server's sandboxes, not those of other suites running on the host.
        String probe = client.create(SandboxSpec.builder().label("probe", "instance").build()).id();
        client.delete(probe);
        this.sandboxPrefix = probe.substring(0, probe.indexOf('-', 3) + 1);
    }

    /** A server on a free port; {@code config} adjusts the defaults (pool size, max sandboxes). */
    static LiveServer start(UnaryOperator<ServerConfig> config) {
        Path dir;
        try {
            dir = Files.createTempDirectory("airlock-e2e-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new LiveServer(AirlockServer.start(config.apply(ServerConfig.defaults().withPort(0).withDataDir(dir))), dir);
    }

    /**
     * A policy like the built-in one (client {@code local} with every operation), plus a profile
     * {@code net} that may reach test.example and other.example, both mapped to 127.0.0.1.
     */
    static final String NET_POLICY = """
            profiles:
              default: {}
              net:
                network:
                  allow: [{host: test.example}, {host: other.example}]
                  ranges: [127.0.0.0/8]
                  hosts: {test.example: [127.0.0.1], other.example: [127.0.0.1]}
            clients:
              local: {tokenFile: token, profiles: [default, net], allow: ["*"]}
            """;

    /**
     * A server with a policy file (written into its data directory, so {@code tokenFile: token}
     * names the token {@link #token()} returns and the SDK client uses).
     */
    static LiveServer withPolicy(String policyYaml, UnaryOperator<ServerConfig> config) {
        Path dir;
        try {
            dir = Files.createTempDirectory("airlock-e2e-");
            Files.writeString(dir.resolve("policy.yaml"), policyYaml);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new LiveServer(AirlockServer.start(config.apply(ServerConfig.defaults().withPort(0).withDataDir(dir)
                .withPolicyFile(dir.resolve("policy.yaml")))), dir);
    }

    URI uri() {
        return server.uri();
    }

    /** The audit records of {@code sandbox} and {@code kind} (null: any), once the writer caught up. */
    java.util.List<dev.airlock.server.audit.AuditRecord> audit(String sandbox, String kind) {
        try {
            assertThat(server.audit().flush(10_000)).as("audit writer caught up").isTrue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
        try (dev.airlock.server.audit.AuditReader reader = dev.airlock.server.audit.AuditReader.open(dataDir.resolve("airlock.db"))) {
            return reader.query(new dev.airlock.server.audit.AuditReader.Query(sandbox, kind, null, 0));
        }
    }

    String token() {
        return server.token();
    }

    /** A raw request, for what the SDK does not let one send; {@code token} null sends none. */
    HttpResponse<String> raw(String method, String path, String body, String token) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(uri() + path))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        try {
            return http.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** A raw request with this server's token. */
    HttpResponse<String> raw(String method, String path, String body) {
        return raw(method, path, body, token());
    }

    /**
     * Everything the sandboxes whose ids start with {@code prefix} ({@code al-<engine>-}) left on
     * this host (processes, runtime state, cgroups, the engine's mounts, directories).
     */
    static List<String> leftovers(String prefix) {
        return new LeakCheck(DRIVER).find(prefix);
    }

    /** Closes the client and the server, then checks that no sandbox left anything behind. */
    @Override
    public void close() {
        try {
            client.close();
        } finally {
            server.close();
            deleteTree(dataDir);
        }
        assertThat(leftovers(sandboxPrefix)).as("what this server's sandboxes left after it closed").isEmpty();
    }

    static void deleteTree(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // best effort: a temp directory
                }
            });
        } catch (IOException ignored) {
            // best effort
        }
    }
}
