package dev.airlock.cli;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Printable;
import dev.airlock.server.policy.TokenFile;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
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
import java.util.concurrent.Callable;

/**
 * {@code airlock approvals}: the operator's side of the approval gate, over the running server's
 * REST API (the client's policy must grant {@code approvals}).
 */
@Command(name = "approvals", mixinStandardHelpOptions = true, description = "List, approve or deny actions waiting for a person.",
        subcommands = {ApprovalsCommand.ListPending.class, ApprovalsCommand.Approve.class, ApprovalsCommand.Deny.class})
final class ApprovalsCommand {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** The token a command presents unless told otherwise: $AIRLOCK_TOKEN_FILE, else the data directory's. */
    static Path defaultTokenFile() {
        return Path.of(System.getenv().getOrDefault("AIRLOCK_TOKEN_FILE",
                System.getenv().getOrDefault("AIRLOCK_DATA_DIR", "/var/lib/airlock") + "/token"));
    }

    /** Where the server is and which token to present. */
    static final class Connection {
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
            HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url.replaceAll("/+$", "") + path))
                    .timeout(Duration.ofSeconds(30))
                    .header("Authorization", "Bearer " + token);
            b = body == null ? b.method(method, HttpRequest.BodyPublishers.noBody())
                    : b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(body.toString()));
            HttpResponse<String> r;
            HttpClient.Builder client = HttpClient.newBuilder();
            if (caFile != null) {
                try {
                    client.sslContext(dev.airlock.client.CaCertificates.sslContext(caFile));
                } catch (IllegalArgumentException e) {
                    throw AirlockException.invalid(e.getMessage() + " (--ca-file)");
                }
            }
            try (HttpClient http = client.build()) {
                r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
            } catch (javax.net.ssl.SSLHandshakeException e) {
                throw AirlockException.unavailable("the server at " + url + " showed a certificate this machine does not trust ("
                        + e.getMessage() + "): give the authority that signed it with --ca-file (env AIRLOCK_CA_FILE)");
            } catch (IOException e) {
                String why = e.getMessage() != null ? e.getMessage()
                        : e instanceof java.net.ConnectException ? "connection refused" : e.getClass().getSimpleName();
                throw AirlockException.unavailable("cannot reach the server at " + url + ": " + why + " (is 'airlock serve' running?"
                        + " Give --url for another one)");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw AirlockException.unavailable("interrupted");
            }
            JsonNode n = r.body().isBlank() ? JSON.createObjectNode() : JSON.readTree(r.body());
            if (r.statusCode() >= 300) {
                String message = errorMessage(n.path("error"), r.statusCode());
                Kind kind = switch (r.statusCode()) {
                    case 401, 403 -> Kind.PERMISSION_DENIED;
                    case 404 -> Kind.NOT_FOUND;
                    case 409 -> Kind.CONFLICT;
                    case 400 -> Kind.INVALID_ARGUMENT;
                    default -> Kind.UNAVAILABLE;
                };
                throw new AirlockException(kind, message);
            }
            return n;
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

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List pending approvals, oldest first.")
    static final class ListPending implements Callable<Integer> {
        @picocli.CommandLine.Mixin
        Connection connection = new Connection();

        @Option(names = "--json", description = "Print the server's JSON.")
        boolean json;

        @Override
        public Integer call() {
            JsonNode list = connection.call("GET", "/v1/approvals", null).path("approvals");
            if (json) {
                System.out.println(list.toString());
                return 0;
            }
            if (list.isEmpty()) {
                System.out.println("no approval is pending");
            }
            for (JsonNode a : list) {
                System.out.println(a.path("id").asString() + "  client " + a.path("client").asString() + "  until "
                        + a.path("deadline").asString() + "\n    " + a.path("summary").asString() + "\n    rule " + a.path("rule").asString());
            }
            return 0;
        }
    }

    abstract static class Decide implements Callable<Integer> {
        @picocli.CommandLine.Mixin
        Connection connection = new Connection();

        @Parameters(paramLabel = "ID", description = "The approval, from 'airlock approvals list'.")
        String id;

        @Option(names = "--reason", paramLabel = "TEXT", description = "Why, for the audit log.")
        String reason;

        abstract String verb();

        @Override
        public Integer call() {
            ObjectNode body = JSON.createObjectNode();
            body.put("by", "cli:" + System.getProperty("user.name"));
            if (reason != null) {
                body.put("reason", reason);
            }
            JsonNode a = connection.call("POST", "/v1/approvals/" + java.net.URLEncoder.encode(id, java.nio.charset.StandardCharsets.UTF_8)
                    + "/" + verb(), body);
            System.out.println(a.path("id").asString() + ": " + a.path("state").asString() + " by " + a.path("decidedBy").asString());
            return 0;
        }
    }

    @Command(name = "approve", mixinStandardHelpOptions = true, description = "Let a pending action go ahead.")
    static final class Approve extends Decide {
        @Override
        String verb() {
            return "approve";
        }
    }

    @Command(name = "deny", mixinStandardHelpOptions = true, description = "Refuse a pending action.")
    static final class Deny extends Decide {
        @Override
        String verb() {
            return "deny";
        }
    }
}
