package dev.airlock.cli;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Printable;
import dev.airlock.server.policy.TokenFile;
import picocli.CommandLine.Option;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The options of a command that calls a running server's REST API ({@code airlock approvals},
 * {@code cluster}, {@code run --server}): where the server is and which token to present.
 */
final class ServerConnection {

    /** The token a command presents unless told otherwise: $AIRLOCK_TOKEN_FILE, else the data directory's. */
    static Path defaultTokenFile() {
        return Path.of(System.getenv().getOrDefault("AIRLOCK_TOKEN_FILE",
                System.getenv().getOrDefault("AIRLOCK_DATA_DIR", "/var/lib/airlock") + "/token"));
    }

    @Option(names = "--url", paramLabel = "URL", description = "The server (env AIRLOCK_URL; default http://127.0.0.1:7700).")
    String url = System.getenv().getOrDefault("AIRLOCK_URL", "http://127.0.0.1:7700");

    @Option(names = "--token-file", paramLabel = "FILE", description = "File holding the token (env AIRLOCK_TOKEN_FILE;"
            + " default: the data directory's token, /var/lib/airlock/token or $AIRLOCK_DATA_DIR/token).")
    Path tokenFile = defaultTokenFile();

    @Option(names = "--ca-file", paramLabel = "FILE", description = "For an https --url whose certificate a private authority signed"
            + " (or that signed its own, as serve --tls-cert allows): that authority's certificate, PEM (env AIRLOCK_CA_FILE).")
    Path caFile = System.getenv("AIRLOCK_CA_FILE") == null ? null : Path.of(System.getenv("AIRLOCK_CA_FILE"));

    JsonNode call(String method, String path, ObjectNode body) {
        String token = TokenFile.read(tokenFile);
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(server() + path))
                .timeout(Duration.ofSeconds(30))
                .header("Authorization", "Bearer " + token);
        b = body == null ? b.method(method, HttpRequest.BodyPublishers.noBody())
                : b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(body.toString()));
        HttpResponse<String> r;
        HttpClient.Builder client = HttpClient.newBuilder();
        if (caFile != null) {
            client.sslContext(caContext());
        }
        try (HttpClient http = client.build()) {
            r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw unreachable(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw AirlockException.unavailable("interrupted");
        }
        JsonNode n = parse(r.body());
        if (r.statusCode() >= 300) {
            throw refused(r.statusCode(), n);
        }
        return n;
    }

    /**
     * A server's answer as JSON (an empty object when blank). The mapper is made here, not when the
     * class loads: run --server holds these options and reads its answers without one (~20 ms).
     */
    static JsonNode parse(String body) {
        JsonMapper json = JsonMapper.builder().build();
        return body.isBlank() ? json.createObjectNode() : json.readTree(body);
    }

    /** --url, without a trailing slash. */
    URI server() {
        URI server;
        try {
            server = new URI(url.replaceAll("/+$", ""));
        } catch (java.net.URISyntaxException e) {
            throw AirlockException.invalid("--url '" + Printable.of(url) + "' is not a URL: " + e.getReason());
        }
        if (!"http".equals(server.getScheme()) && !"https".equals(server.getScheme()) || server.getHost() == null) {
            throw AirlockException.invalid("--url '" + Printable.of(url) + "' is not an http or https URL with a host, such as"
                    + " http://127.0.0.1:7700");
        }
        return server;
    }

    /** The TLS of an https --url: the authority of --ca-file, else those this machine trusts; null for http. */
    javax.net.ssl.SSLSocketFactory tls(URI server) {
        if (!"https".equals(server.getScheme())) {
            return null;
        }
        try {
            return (caFile != null ? caContext() : javax.net.ssl.SSLContext.getDefault()).getSocketFactory();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw AirlockException.unavailable("this Java runtime has no TLS: " + e.getMessage());
        }
    }

    private javax.net.ssl.SSLContext caContext() {
        try {
            return dev.airlock.client.CaCertificates.sslContext(caFile);
        } catch (IllegalArgumentException e) {
            throw AirlockException.invalid(e.getMessage() + " (--ca-file)");
        }
    }

    /** What to tell a user whose call could not reach the server. */
    AirlockException unreachable(IOException e) {
        if (e instanceof javax.net.ssl.SSLHandshakeException) {
            return AirlockException.unavailable("the server at " + url + " showed a certificate this machine does not trust ("
                    + e.getMessage() + "): give the authority that signed it with --ca-file (env AIRLOCK_CA_FILE)");
        }
        String why = e.getMessage() != null ? e.getMessage()
                : e instanceof java.net.ConnectException ? "connection refused" : e.getClass().getSimpleName();
        return AirlockException.unavailable("cannot reach the server at " + url + ": " + why + " (is 'airlock serve' running?"
                + " Give --url for another one)");
    }

    /** The server's answer {@code n} with status {@code status} (300 or more) as the error it is. */
    static AirlockException refused(int status, JsonNode n) {
        Kind kind = switch (status) {
            case 401, 403 -> Kind.PERMISSION_DENIED;
            case 404 -> Kind.NOT_FOUND;
            case 409 -> Kind.CONFLICT;
            case 400 -> Kind.INVALID_ARGUMENT;
            default -> Kind.UNAVAILABLE;
        };
        return new AirlockException(kind, errorMessage(n.path("error"), status));
    }

    /**
     * The server's error sentence and, for a refusal, the control and rule that refused, as the
     * SDK and the MCP door show them: {@code <message> [refused by <control>: <rule>]}. The
     * server's text is cleaned of control characters before it reaches the terminal.
     */
    static String errorMessage(JsonNode error, int status) {
        String message = Printable.of(error.path("message").asString("HTTP " + status), 1000);
        if (!error.path("control").isString()) {
            return message;
        }
        String rule = error.path("rule").isString() ? ": " + Printable.of(error.path("rule").asString()) : "";
        return message + " [refused by " + Printable.of(error.path("control").asString(), 40) + rule + "]";
    }
}
