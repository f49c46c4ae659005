package dev.airlock.server.console;

import dev.airlock.core.AirlockException;
import dev.airlock.server.command.CommandApi;
import dev.airlock.server.http.BodyReader;
import dev.airlock.server.http.ConsoleSessions;
import dev.airlock.server.http.JsonViews;
import dev.airlock.server.http.LocalOrigin;
import dev.airlock.server.http.SecurityHeaders;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Operation;
import dev.airlock.server.wire.Json;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The web console's own endpoints (docs/security-model.md, "Web console"): its static pages from
 * the jar at {@code /} and {@code /console/*}, and sign-in and sign-out at {@code /console/session}.
 * Everything the console shows or does afterwards goes through the REST API with the session
 * cookie (the REST API), so the policy decides it exactly as for that client's bearer token.
 */
public final class ConsoleServlet extends HttpServlet {

    private static final String RESOURCES = "";
    /** Where browsers look for a site's icon unasked: the console's icon, served like its pages. */
    public static final String FAVICON = "/favicon.ico";
    private static final Pattern ASSET = Pattern.compile("[a-z0-9-]+\\.(html|js|css|png|svg)");
    /**
     * Third-party files the pages use, served from their WebJars on the class path (the version
     * is the one the build pinned, read from the jar): {@code /console/vendor/<name>} → the file.
     */
    private static final Map<String, String> VENDOR = Map.of(
            "uplot.js", webJar("uplot", "dist/uPlot.esm.js"),
            "uplot.css", webJar("uplot", "dist/uPlot.min.css"));
    /** Where index.html has its style nonce, replaced in each response by {@link #page}. */
    private static final String NONCE_MARK = "STYLE-NONCE";
    private static final SecureRandom NONCES = new SecureRandom();
    private static final Map<String, String> TYPES = Map.of("html", "text/html; charset=utf-8", "js", "text/javascript; charset=utf-8",
            "css", "text/css; charset=utf-8", "png", "image/png", "svg", "image/svg+xml");

    private final CommandApi service;
    private final ConsoleSessions sessions;
    private final String bindHost;

    public ConsoleServlet(CommandApi service, ConsoleSessions sessions, String bindHost) {
        this.service = service;
        this.sessions = sessions;
        this.bindHost = bindHost;
    }

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String path = req.getRequestURI();
        if (path.equals(ConsoleSessions.PATH)) {
            session(req, resp);
            return;
        }
        if (!req.getMethod().equals("GET") && !req.getMethod().equals("HEAD")) {
            resp.setHeader("Allow", "GET, HEAD");
            error(resp, 405, "method_not_allowed", "the console's pages are read with GET");
            return;
        }
        if (path.startsWith("/console/vendor/")) {
            String file = VENDOR.get(path.substring("/console/vendor/".length()));
            if (file == null) {
                error(resp, 404, "not_found", "no such console file: " + Json.printable(path) + " (open / for the console)");
                return;
            }
            serve(resp, ConsoleServlet.class.getClassLoader().getResourceAsStream(file), file, path);
            return;
        }
        String name = path.equals("/") || path.equals("/console/") || path.equals("/console") ? "index.html"
                : path.equals(FAVICON) ? "icon.svg" // what browsers ask for on their own, without a credential
                : path.startsWith("/console/") ? path.substring("/console/".length()) : "";
        if (!ASSET.matcher(name).matches()) {
            error(resp, 404, "not_found", "no such console page: " + Json.printable(path) + " (open / for the console)");
            return;
        }
        if (name.equals("index.html")) {
            page(resp);
            return;
        }
        serve(resp, ConsoleServlet.class.getResourceAsStream(RESOURCES + name), name, path);
    }

    /**
     * The console's page, with a style nonce of its own (16 random bytes) in its CSP and on its
     * style sheet's link, where the page's script reads it ({@link SecurityHeaders#consolePage}).
     */
    private static void page(HttpServletResponse resp) throws IOException {
        byte[] random = new byte[16];
        NONCES.nextBytes(random);
        String nonce = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
        String html;
        try (InputStream in = ConsoleServlet.class.getResourceAsStream(RESOURCES + "index.html")) {
            html = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        resp.setStatus(200);
        resp.setContentType(TYPES.get("html"));
        resp.setHeader("Cache-Control", "no-store");
        resp.setHeader("Content-Security-Policy", SecurityHeaders.consolePage(nonce));
        resp.getOutputStream().write(html.replace(NONCE_MARK, nonce).getBytes(StandardCharsets.UTF_8));
    }

    /** Sends one file of the jar, typed by its name's extension; 404 when it is not there. */
    private static void serve(HttpServletResponse resp, InputStream resource, String name, String path) throws IOException {
        try (InputStream in = resource) {
            if (in == null) {
                error(resp, 404, "not_found", "no such console page: " + Json.printable(path) + " (open / for the console)");
                return;
            }
            resp.setStatus(200);
            resp.setContentType(TYPES.get(name.substring(name.lastIndexOf('.') + 1)));
            resp.setHeader("Cache-Control", "no-cache");
            in.transferTo(resp.getOutputStream());
        }
    }

    /** The class path name of {@code file} in the npm WebJar {@code artifact}, at the version on the class path. */
    private static String webJar(String artifact, String file) {
        String properties = "META-INF/maven/org.webjars.npm/" + artifact + "/pom.properties";
        try (InputStream in = ConsoleServlet.class.getClassLoader().getResourceAsStream(properties)) {
            if (in == null) {
                throw new IllegalStateException("the WebJar org.webjars.npm:" + artifact + " is not on the class path (" + properties + ")");
            }
            java.util.Properties p = new java.util.Properties();
            p.load(in);
            return "META-INF/resources/webjars/" + artifact + "/" + p.getProperty("version") + "/" + file;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** POST signs in with a token, GET tells the page who is signed in (and its CSRF token), DELETE signs out. */
    private void session(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String notLocal = LocalOrigin.consoleRefusal(req, bindHost);
        if (notLocal != null) {
            error(resp, 403, "forbidden", notLocal);
            return;
        }
        switch (req.getMethod()) {
            case "POST" -> signIn(req, resp);
            case "GET" -> {
                ConsoleSessions.Session s = sessions.lookup(ConsoleSessions.cookie(req));
                Client client = s == null ? null : service.policy().clients().get(s.client);
                if (client == null) {
                    // with a fresh sign-in token for the page's sign-in form (ConsoleSessions.SIGN_IN_COOKIE)
                    String signIn = sessions.signInToken();
                    resp.addHeader("Set-Cookie", ConsoleSessions.setSignInCookie(signIn, req.isSecure()));
                    send(resp, 401, JsonViews.errorNode("unauthenticated", "not signed in (or the session expired): sign in with a client token",
                            null).put("signInToken", signIn));
                    return;
                }
                send(resp, 200, describe(client, s));
            }
            case "DELETE" -> {
                String id = ConsoleSessions.cookie(req);
                ConsoleSessions.Session s = sessions.lookup(id);
                if (s != null && !s.csrfMatches(req.getHeader(ConsoleSessions.CSRF_HEADER))) {
                    error(resp, 403, "csrf", "sign-out needs the session's CSRF token in the " + ConsoleSessions.CSRF_HEADER + " header");
                    return;
                }
                sessions.close(id);
                Client client = s == null ? null : service.policy().clients().get(s.client);
                if (client != null) {
                    recordSessionRequest(client, "DELETE");
                }
                resp.addHeader("Set-Cookie", ConsoleSessions.setCookie(null, req.isSecure()));
                resp.setStatus(204);
            }
            default -> {
                resp.setHeader("Allow", "GET, POST, DELETE");
                error(resp, 405, "method_not_allowed", "use POST to sign in, GET to see the session, DELETE to sign out");
            }
        }
    }

    private void signIn(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        if (!ConsoleSessions.signInTokenMatches(req)) {
            error(resp, 403, "csrf", "a sign-in must carry the sign-in token of the console's page in the " + ConsoleSessions.CSRF_HEADER
                    + " header (a page of another origin cannot): sign in from the console's page, or call the API with"
                    + " 'Authorization: Bearer <token>' instead");
            return;
        }
        JsonNode body;
        try {
            body = Json.parseObject(BodyReader.read(req, 4096, "a sign-in body is a small JSON object: {\"token\": \"...\"}"), Set.of("token"));
        } catch (AirlockException e) {
            error(resp, 400, "invalid_argument", e.getMessage());
            return;
        }
        String token = Json.string(body, "token");
        Client client = token == null ? null : service.policy().authenticate("Bearer " + token).orElse(null);
        if (client == null) {
            service.refuseUnauthenticated("console", "console", "POST " + ConsoleSessions.PATH, req.getRemoteAddr(), token != null);
            error(resp, 401, "unauthenticated", "that is not a client token of this server: sign in with a client token of its policy"
                    + " (the built-in client's is in <data-dir>/token)");
            return;
        }
        ConsoleSessions.Opened opened;
        try {
            opened = sessions.open(client.name());
        } catch (AirlockException e) {
            error(resp, 429, "quota_exceeded", e.getMessage());
            return;
        }
        recordSessionRequest(client, "POST");
        resp.addHeader("Set-Cookie", ConsoleSessions.setCookie(opened.id(), req.isSecure()));
        send(resp, 200, describe(client, opened.session()));
    }

    /** A sign-in or sign-out on the audit log: a request of the client, through the console, that needs no operation. */
    private void recordSessionRequest(Client client, String method) {
        service.recordUndecided(new CommandApi.Request(client, ConsoleSessions.VIA, ConsoleSessions.VIA, method + " " + ConsoleSessions.PATH,
                null, null, null, null, null));
    }

    /** {@code {client, csrf, operations, profiles}}: what the page needs to call the API and which pages and actions to offer. */
    private static ObjectNode describe(Client client, ConsoleSessions.Session s) {
        ObjectNode n = Json.object().put("client", client.name()).put("csrf", s.csrf);
        ArrayNode ops = n.putArray("operations");
        for (Operation o : client.operations()) {
            ops.add(o.id());
        }
        ArrayNode profiles = n.putArray("profiles"); // the first is the client's default
        client.profiles().forEach(profiles::add);
        n.put("idleTimeoutSeconds", ConsoleSessions.IDLE.toSeconds());
        n.put("expiresAt", s.created.plus(ConsoleSessions.ABSOLUTE).toString());
        return n;
    }

    private static void send(HttpServletResponse resp, int status, ObjectNode body) throws IOException {
        resp.setStatus(status);
        resp.setContentType("application/json");
        resp.getOutputStream().write(Json.MAPPER.writeValueAsBytes(body));
    }

    private static void error(HttpServletResponse resp, int status, String code, String message) throws IOException {
        resp.setStatus(status);
        resp.setContentType("application/json");
        resp.getOutputStream().write(JsonViews.error(code, message));
    }
}
