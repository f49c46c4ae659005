package dev.airlock.client;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.Function;

/**
 * The HTTP side, in one place: URLs, the bearer token, sending, and turning every failure into
 * the {@link AirlockException} it stands for. Bodies are always received as streams, so that an
 * error body is read only up to {@link #MAX_ERROR_BODY} bytes and a download is never buffered.
 */
final class Transport {

    static final int MAX_ERROR_BODY = 64 * 1024;
    private static final String USER_AGENT = "airlock-java-client/0.1";
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();
    /** {@code HttpClient.shutdownNow()} exists from Java 21; this client runs on 17 too. */
    private static final Method SHUTDOWN_NOW = shutdownNowMethod();

    private final String base;
    private final String authorization;
    private final HttpClient http;
    private final Duration requestTimeout;
    private volatile boolean closed;

    /** {@code tls}: whom an https server's certificate must be signed by (null: the JDK's trusted authorities). */
    Transport(URI base, String token, Duration connectTimeout, Duration requestTimeout, javax.net.ssl.SSLContext tls) {
        String b = base.toString();
        this.base = b.endsWith("/") ? b.substring(0, b.length() - 1) : b;
        this.authorization = "Bearer " + token;
        this.requestTimeout = requestTimeout;
        HttpClient.Builder http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)          // no h2c upgrade dance with a local server
                .followRedirects(HttpClient.Redirect.NEVER)     // never carry the token elsewhere
                .connectTimeout(connectTimeout);
        this.http = (tls == null ? http : http.sslContext(tls)).build();
    }

    String baseUrl() {
        return base;
    }

    /**
     * Opens a WebSocket to {@code path} with the token. A refused handshake throws the exception for
     * its status (403, 404, 409, 429, ...), with the server's message when it sent one.
     */
    java.net.http.WebSocket webSocket(String path, java.net.http.WebSocket.Listener listener) {
        if (closed) {
            throw new IllegalStateException("this Airlock client is closed; connect again to use " + base);
        }
        String what = "GET " + path;
        URI uri = URI.create(base.replaceFirst("^http", "ws") + path);
        try {
            return http.newWebSocketBuilder().header("Authorization", authorization).connectTimeout(requestTimeout)
                    .buildAsync(uri, listener).get(requestTimeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AirlockInterruptedException("interrupted while opening " + what + " at " + base, e);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AirlockConnectionException("the Airlock server at " + base + " did not open " + what + " within "
                    + requestTimeout.toMillis() + " ms", e);
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof java.net.http.WebSocketHandshakeException h) {
                HttpResponse<?> r = h.getResponse();
                byte[] body = r.body() instanceof byte[] b ? b : r.body() instanceof String s ? s.getBytes(StandardCharsets.UTF_8) : new byte[0];
                throw Errors.fromResponse(r.statusCode(), body, what);
            }
            throw new AirlockConnectionException("cannot open " + what + " at " + base + ": " + e.getCause(), e.getCause());
        }
    }

    // ---- URLs

    /** {@code /v1/sandboxes/{id}/...}: each segment percent-encoded. */
    static String path(String... segments) {
        StringBuilder b = new StringBuilder();
        for (String s : segments) {
            b.append('/').append(encode(s, false));
        }
        return b.toString();
    }

    /** Appends {@code ?k=v&k=v}; values are percent-encoded, '/' kept readable. */
    static String query(String path, String... keyValues) {
        StringBuilder b = new StringBuilder(path);
        for (int i = 0; i < keyValues.length; i += 2) {
            b.append(i == 0 ? '?' : '&').append(encode(keyValues[i], false)).append('=').append(encode(keyValues[i + 1], true));
        }
        return b.toString();
    }

    private static String encode(String s, boolean keepSlash) {
        StringBuilder b = new StringBuilder();
        for (byte x : s.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (x & 0xff);
            boolean plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '-' || c == '.' || c == '_' || c == '~' || (keepSlash && c == '/');
            if (plain) {
                b.append(c);
            } else {
                b.append('%').append(HEX[c >> 4]).append(HEX[c & 0xf]);
            }
        }
        return b.toString();
    }

    // ---- requests

    /** A request with the token; {@code longRunning} ones (exec, transfers) have no answer deadline. */
    HttpRequest.Builder request(String pathAndQuery, boolean longRunning) {
        if (closed) {
            throw new IllegalStateException("this Airlock client is closed; connect again to use " + base);
        }
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + pathAndQuery))
                .header("Authorization", authorization)
                .header("User-Agent", USER_AGENT);
        if (!longRunning) {
            b.timeout(requestTimeout);
        }
        return b;
    }

    static HttpRequest.BodyPublisher jsonBody(JsonNode body) {
        return HttpRequest.BodyPublishers.ofByteArray(Json.MAPPER.writeValueAsBytes(body));
    }

    /** Sends a JSON request (or none, for a null body) and maps the JSON answer with {@code parser}. */
    <T> T json(String method, String pathAndQuery, JsonNode body, boolean longRunning, Function<JsonNode, T> parser) {
        HttpRequest.Builder b = request(pathAndQuery, longRunning).header("Accept", "application/json");
        if (body != null) {
            b.header("Content-Type", "application/json").method(method, jsonBody(body));
        } else {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        }
        HttpResponse<InputStream> r = open(b.build());
        return parse(readJson(r), parser, r.statusCode(), describe(r.request()));
    }

    /** Applies {@code parser}, turning a contract violation into a {@link ServerException}. */
    static <T> T parse(JsonNode n, Function<JsonNode, T> parser, int status, String what) {
        try {
            return parser.apply(n);
        } catch (Json.BadResponse | IllegalArgumentException | NullPointerException e) {
            throw Errors.unreadable(status, what, String.valueOf(e.getMessage()));
        }
    }

    /** Sends a request whose success answer has nothing this client needs (204, 202). */
    void noContent(String method, String pathAndQuery, JsonNode body) {
        HttpRequest.Builder b = request(pathAndQuery, false);
        if (body != null) {
            b.header("Content-Type", "application/json").method(method, jsonBody(body));
        } else {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        }
        HttpResponse<InputStream> r = open(b.build());
        try (InputStream in = r.body()) {
            in.readNBytes(MAX_ERROR_BODY);
        } catch (IOException ignored) {
            // the status already said it worked
        }
    }

    /**
     * Sends {@code request} and returns the answer with its body still open, if the status is 2xx;
     * otherwise reads a bounded part of the error body and throws the exception for the status.
     */
    HttpResponse<InputStream> open(HttpRequest request) {
        String what = describe(request);
        HttpResponse<InputStream> r;
        try {
            r = http.send(request, InterruptibleBody.HANDLER);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AirlockInterruptedException("interrupted while waiting for " + what + " at " + base, e);
        } catch (HttpConnectTimeoutException e) {
            throw unreachable(what, "no connection within the connect timeout", e);
        } catch (HttpTimeoutException e) {
            throw new AirlockConnectionException("the Airlock server at " + base + " did not answer " + what
                    + " within " + requestTimeout.toMillis() + " ms", e);
        } catch (ConnectException e) {
            throw unreachable(what, "connection refused", e);
        } catch (javax.net.ssl.SSLHandshakeException e) {
            throw new AirlockConnectionException("the Airlock server at " + base + " showed a certificate this client does not trust ("
                    + reason(e) + "): give the authority that signed it with Airlock.builder().caFile(...) (env AIRLOCK_CA_FILE)", e);
        } catch (IOException e) {
            if (Thread.currentThread().isInterrupted()) {
                throw new AirlockInterruptedException("interrupted while waiting for " + what + " at " + base, e);
            }
            throw new AirlockConnectionException("the connection to the Airlock server at " + base + " failed during "
                    + what + ": " + reason(e), e);
        } catch (IllegalStateException e) {
            if (closed) {
                throw new IllegalStateException("this Airlock client is closed; connect again to use " + base, e);
            }
            throw e;
        }
        int status = r.statusCode();
        if (status >= 200 && status < 300) {
            return r;
        }
        byte[] body;
        try (InputStream in = r.body()) {
            body = in.readNBytes(MAX_ERROR_BODY);
        } catch (IOException e) {
            body = new byte[0];
        }
        throw Errors.fromResponse(status, body, what);
    }

    /** Sends {@code request} and returns its answer whole, whatever its status (a preview port's answer). */
    HttpResponse<byte[]> sendRaw(HttpRequest request) {
        String what = describe(request);
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofByteArray());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AirlockInterruptedException("interrupted while waiting for " + what + " at " + base, e);
        } catch (IOException e) {
            throw new AirlockConnectionException("the connection to the Airlock server at " + base + " failed during "
                    + what + ": " + reason(e), e);
        }
    }

    /** Reads a 2xx answer as JSON. */
    JsonNode readJson(HttpResponse<InputStream> r) {
        String what = describe(r.request());
        try (InputStream in = r.body()) {
            return Json.MAPPER.readTree(in);
        } catch (JacksonException e) {
            throw Errors.unreadable(r.statusCode(), what, "not JSON (" + e.getOriginalMessage() + ")");
        } catch (IOException e) {
            throw broken(what, e);
        }
    }

    /** An I/O failure while reading an answer's body. */
    AirlockException broken(String what, IOException e) {
        if (Thread.currentThread().isInterrupted()) {
            return new AirlockInterruptedException("interrupted while reading the answer to " + what + " from " + base, e);
        }
        return new AirlockConnectionException("the connection to the Airlock server at " + base
                + " broke while reading the answer to " + what + ": " + reason(e), e);
    }

    static String describe(HttpRequest r) {
        String p = r.uri().getRawPath();
        return r.method() + " " + Errors.sanitize(p, 200);
    }

    private AirlockConnectionException unreachable(String what, String why, Exception e) {
        return new AirlockConnectionException("could not reach the Airlock server at " + base + " (" + what + ": " + why
                + "): check that `bin/airlock serve` runs there, or point AIRLOCK_URL at it", e);
    }

    private static String reason(Throwable e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null ? "" : " " + Errors.sanitize(m, 200));
    }

    /** Ends in-flight requests (on Java 21+) and refuses new ones. */
    void close() {
        closed = true;
        if (SHUTDOWN_NOW != null) {
            try {
                SHUTDOWN_NOW.invoke(http);
            } catch (ReflectiveOperationException | RuntimeException ignored) {
                // best effort: on Java 17 the client's threads end when it is collected
            }
        }
    }

    private static Method shutdownNowMethod() {
        try {
            return HttpClient.class.getMethod("shutdownNow");
        } catch (NoSuchMethodException e) {
            return null;
        }
    }
}
