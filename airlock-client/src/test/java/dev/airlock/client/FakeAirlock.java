package dev.airlock.client;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A fake Airlock server on a real loopback socket: routes answer with canned responses per
 * docs/rest-api.md, and every request is recorded so tests can check what went over the wire.
 */
final class FakeAirlock implements AutoCloseable {

    static final String TOKEN = "test-token-0123456789";

    /** What one request carried. {@code body} is null for routes that consume the body themselves. */
    record Recorded(String method, String rawPath, String rawQuery, Headers headers, byte[] body) {
        String bodyText() {
            return new String(body, StandardCharsets.UTF_8);
        }

        String header(String name) {
            return headers.getFirst(name);
        }
    }

    interface Handler {
        void handle(HttpExchange exchange) throws Exception;
    }

    private record Route(Handler handler, boolean consumesBody) {
    }

    private final HttpServer server;
    private final ExecutorService executor = Executors.newCachedThreadPool();
    private final Map<String, Route> routes = new ConcurrentHashMap<>();
    final List<Recorded> requests = new CopyOnWriteArrayList<>();

    FakeAirlock() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(executor);
        server.createContext("/", this::dispatch);
        server.start();
    }

    URI url() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    Airlock client() {
        return Airlock.connect(url(), TOKEN);
    }

    /** Answers {@code method path} with {@code status} and a JSON body (null: no body). */
    FakeAirlock reply(String method, String path, int status, String json) {
        routes.put(method + " " + path, new Route(ex -> send(ex, status, "application/json", json), false));
        return this;
    }

    /** Answers {@code method path} with a handler that reads the recorded body itself if it wants. */
    FakeAirlock on(String method, String path, Handler handler) {
        routes.put(method + " " + path, new Route(handler, false));
        return this;
    }

    /** A handler that reads the request body itself (streaming); the recorded body is null. */
    FakeAirlock onStreaming(String method, String path, Handler handler) {
        routes.put(method + " " + path, new Route(handler, true));
        return this;
    }

    Recorded last() {
        return requests.get(requests.size() - 1);
    }

    static void send(HttpExchange ex, int status, String contentType, String body) throws IOException {
        if (body == null) {
            ex.sendResponseHeaders(status, -1);
            ex.close();
            return;
        }
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", contentType);
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    static String error(String code, String message) {
        return "{\"error\":{\"code\":\"" + code + "\",\"message\":\"" + message + "\"}}";
    }

    private void dispatch(HttpExchange ex) throws IOException {
        try {
            Route route = routes.get(ex.getRequestMethod() + " " + ex.getRequestURI().getRawPath());
            byte[] body = route != null && route.consumesBody() ? null : ex.getRequestBody().readAllBytes();
            requests.add(new Recorded(ex.getRequestMethod(), ex.getRequestURI().getRawPath(),
                    ex.getRequestURI().getRawQuery(), ex.getRequestHeaders(), body));
            if (route == null) {
                send(ex, 404, "application/json", error("not_found", "no route " + ex.getRequestMethod() + " " + ex.getRequestURI().getRawPath()));
                return;
            }
            route.handler().handle(ex);
        } catch (Exception e) {
            // the client went away or the test handler failed; the test sees it on the client side
        } finally {
            ex.close();
        }
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
