package dev.airlock.client;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * A connection to an Airlock server ({@code bin/airlock serve}), the entry point of this SDK:
 * create sandboxes, find existing ones, run code once in a sandbox of its own, check the server's
 * health.
 *
 * <pre>{@code
 * try (Airlock airlock = Airlock.fromEnvironment();
 *      RemoteSandbox sandbox = airlock.create(SandboxSpec.defaults())) {
 *     System.out.print(sandbox.exec("python3", "-c", "print(1)").stdout());
 * }
 * }</pre>
 *
 * <p>One instance is meant to be shared by a whole application and is safe to use from several
 * threads. All calls block; every failure is an unchecked {@link AirlockException}.
 */
public final class Airlock implements AutoCloseable {

    /** Where {@code bin/airlock serve} listens by default. */
    public static final URI DEFAULT_URL = URI.create("http://127.0.0.1:7700");
    /** The server's default data directory, where it stores its token. */
    public static final Path DEFAULT_DATA_DIR = Path.of("/var/lib/airlock");

    private final Transport transport;

    private Airlock(Transport transport) {
        this.transport = transport;
    }

    /** Connects to the server at {@code url} with {@code token} and default timeouts. */
    public static Airlock connect(URI url, String token) {
        return builder().url(url).token(token).build();
    }

    /**
     * Connects as configured by the environment: {@code AIRLOCK_URL} (default
     * {@code http://127.0.0.1:7700}) and {@code AIRLOCK_TOKEN}, or else the token file the server
     * wrote, {@code $AIRLOCK_DATA_DIR/token} (default {@code /var/lib/airlock/token}), which only
     * the server's user can read; {@code AIRLOCK_CA_FILE}: as {@link Builder#caFile}.
     */
    public static Airlock fromEnvironment() {
        return fromEnvironment(System.getenv());
    }

    static Airlock fromEnvironment(Map<String, String> env) {
        String url = env.get("AIRLOCK_URL");
        URI uri = url == null || url.isBlank() ? DEFAULT_URL : parseUrl(url.trim(), "AIRLOCK_URL");
        String token = env.get("AIRLOCK_TOKEN");
        if (token == null || token.isBlank()) {
            String dataDir = env.get("AIRLOCK_DATA_DIR");
            Path file = (dataDir == null || dataDir.isBlank() ? DEFAULT_DATA_DIR : Path.of(dataDir)).resolve("token");
            token = readToken(file);
        }
        String caFile = env.get("AIRLOCK_CA_FILE");
        Builder b = builder().url(uri).token(token.trim());
        return (caFile == null || caFile.isBlank() ? b : b.caFile(Path.of(caFile.trim()))).build();
    }

    private static String readToken(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            byte[] bytes = in.readNBytes(4096);
            String token = new String(bytes, StandardCharsets.UTF_8).trim();
            if (token.isEmpty()) {
                throw new AirlockException("client", "the token file " + file + " is empty: set AIRLOCK_TOKEN", null);
            }
            return token;
        } catch (IOException e) {
            throw new AirlockException("client", "no token: AIRLOCK_TOKEN is not set and " + file + " cannot be read ("
                    + e.getClass().getSimpleName() + "); set AIRLOCK_TOKEN to the content of the server's token file", e);
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Creates a sandbox with the server's defaults, served from its warm pool. */
    public RemoteSandbox create() {
        return create(SandboxSpec.defaults());
    }

    /** Creates a sandbox; close it (try-with-resources) to destroy it. */
    public RemoteSandbox create(SandboxSpec spec) {
        Objects.requireNonNull(spec, "spec");
        return new RemoteSandbox(transport, transport.json("POST", "/v1/sandboxes", RequestBodies.spec(spec), false, Json::sandbox));
    }

    /**
     * Creates {@code count} sandboxes (1 to 16) from one of your snapshots, each with its files, its
     * profile and image, and a fresh identity: a restore for one, a fork for more. All or none. Close
     * each to destroy it.
     *
     * @throws ConflictException if the snapshot was altered on the server's host, or its image changed
     */
    public List<RemoteSandbox> fork(String snapshotId, int count) {
        Objects.requireNonNull(snapshotId, "snapshotId");
        if (count < 1 || count > 16) {
            throw new IllegalArgumentException("count " + count + " is out of range: fork 1 to 16 sandboxes at once");
        }
        List<SandboxInfo> made = transport.json("POST", Transport.path("v1", "snapshots", snapshotId, "fork"),
                RequestBodies.object("count", count), true, Json::sandboxes);
        return made.stream().map(info -> new RemoteSandbox(transport, info)).toList();
    }

    /** Your snapshots, oldest first. */
    public List<SnapshotInfo> snapshots() {
        return transport.json("GET", "/v1/snapshots", null, false, Json::snapshots);
    }

    /** Deletes one of your snapshots; returns whether it existed. */
    public boolean deleteSnapshot(String snapshotId) {
        Objects.requireNonNull(snapshotId, "snapshotId");
        try {
            transport.noContent("DELETE", Transport.path("v1", "snapshots", snapshotId), null);
            return true;
        } catch (NotFoundException gone) {
            return false;
        }
    }

    /**
     * Attaches to an existing sandbox, for example one created by another process.
     *
     * @throws NotFoundException if it does not exist (any more)
     */
    public RemoteSandbox get(String id) {
        Objects.requireNonNull(id, "id");
        return new RemoteSandbox(transport, transport.json("GET", Transport.path("v1", "sandboxes", id), null, false, Json::sandbox));
    }

    /**
     * Runs source code once in a fresh sandbox and returns its result and the files it left in
     * {@code /workspace/output}; the server destroys the sandbox at the end ({@code POST /v1/run}).
     * Needs the {@code run} operation of the server's policy.
     */
    public RunResult run(Language language, String code) {
        return run(Run.code(language, code));
    }

    /**
     * Runs {@code run} once in a fresh sandbox made with the client's first profile: its files
     * placed, its code run, what it left in {@code /workspace/output} collected (see
     * {@link RunResult}), the sandbox destroyed. A program that fails or times out is a normal
     * result, not an exception: check {@link RunResult#endReason()} and the exit code.
     */
    public RunResult run(Run run) {
        Objects.requireNonNull(run, "run");
        return transport.json("POST", "/v1/run", RequestBodies.run(run), true, Json::runResult);
    }

    /** Every sandbox on the server. */
    public List<SandboxInfo> list() {
        return list(Map.of());
    }

    /** The sandboxes carrying all of {@code labels}, for example to clean up after a crash. */
    public List<SandboxInfo> list(Map<String, String> labels) {
        List<String> query = new ArrayList<>();
        new TreeMap<>(labels).forEach((k, v) -> {
            query.add("label");
            query.add(k + "=" + v);
        });
        return transport.json("GET", Transport.query("/v1/sandboxes", query.toArray(new String[0])), null, false, Json::sandboxes);
    }

    /**
     * Destroys a sandbox by id without attaching to it.
     *
     * @return false if it did not exist
     */
    public boolean delete(String id) {
        Objects.requireNonNull(id, "id");
        try {
            transport.noContent("DELETE", Transport.path("v1", "sandboxes", id), null);
            return true;
        } catch (NotFoundException e) {
            return false;
        }
    }

    /** {@code GET /health}: whether the server serves, and how many sandboxes it holds. */
    public ServerHealth health() {
        return transport.json("GET", "/health", null, false, Json::health);
    }

    /** The server's URL. */
    public URI url() {
        return URI.create(transport.baseUrl());
    }

    /**
     * Closes the connection: later calls fail with {@link IllegalStateException}. Sandboxes are
     * not destroyed by this; close them first, or they expire by their ttl.
     */
    @Override
    public void close() {
        transport.close();
    }

    @Override
    public String toString() {
        return "Airlock[" + transport.baseUrl() + "]";   // never the token
    }

    private static URI parseUrl(String url, String source) {
        try {
            return URI.create(url);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(source + " '" + Errors.sanitize(url, 200)
                    + "' is not a URL: give one such as http://127.0.0.1:7700", e);
        }
    }

    /** Connection settings; {@link #url} and {@link #token} are required. */
    public static final class Builder {
        private URI url;
        private String token;
        private Duration connectTimeout = Duration.ofSeconds(10);
        private Duration requestTimeout = Duration.ofSeconds(60);
        private Path caFile;

        Builder() {
        }

        /**
         * For an {@code https} server whose certificate a private authority signed (or that signed
         * its own, as {@code serve --tls-cert} allows): the PEM file of that authority's
         * certificate, trusted instead of the JDK's authorities.
         */
        public Builder caFile(Path pemFile) {
            this.caFile = Objects.requireNonNull(pemFile, "caFile");
            return this;
        }

        /** The server, such as {@code http://127.0.0.1:7700}; a path prefix is kept. */
        public Builder url(URI url) {
            this.url = url;
            return this;
        }

        public Builder url(String url) {
            this.url = parseUrl(url, "url");
            return this;
        }

        /** The bearer token from the server's {@code <data dir>/token}. */
        public Builder token(String token) {
            this.token = token;
            return this;
        }

        /** How long to wait for a connection (default 10 s). */
        public Builder connectTimeout(Duration timeout) {
            this.connectTimeout = positive("connectTimeout", timeout);
            return this;
        }

        /**
         * How long to wait for the answer to a short request (default 60 s). Executions and file
         * transfers are not bounded by it: they take as long as the sandbox's limits allow.
         */
        public Builder requestTimeout(Duration timeout) {
            this.requestTimeout = positive("requestTimeout", timeout);
            return this;
        }

        public Airlock build() {
            if (url == null) {
                throw new IllegalArgumentException("url is missing: give the server's URL, such as " + DEFAULT_URL);
            }
            String scheme = url.getScheme();
            if (!"http".equalsIgnoreCase(scheme) && !"https".equalsIgnoreCase(scheme) || url.getHost() == null) {
                throw new IllegalArgumentException("url '" + Errors.sanitize(url.toString(), 200)
                        + "' is not an http(s) URL with a host, such as " + DEFAULT_URL);
            }
            if (url.getRawQuery() != null || url.getRawFragment() != null) {
                throw new IllegalArgumentException("url '" + Errors.sanitize(url.toString(), 200) + "' must not have a query or fragment");
            }
            if (token == null || token.isBlank()) {
                throw new IllegalArgumentException("token is missing: it is in the server's <data dir>/token (default /var/lib/airlock/token)");
            }
            for (int i = 0; i < token.length(); i++) {
                char c = token.charAt(i);
                if (c <= ' ' || c > '~') {
                    throw new IllegalArgumentException("token contains a character that cannot go in an HTTP header"
                            + " (position " + i + "): copy it again from the server's token file");
                }
            }
            return new Airlock(new Transport(url, token, connectTimeout, requestTimeout, caFile == null ? null : CaCertificates.sslContext(caFile)));
        }

        private static Duration positive(String field, Duration d) {
            Objects.requireNonNull(d, field);
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(field + " " + d + " must be positive");
            }
            return d;
        }
    }
}
