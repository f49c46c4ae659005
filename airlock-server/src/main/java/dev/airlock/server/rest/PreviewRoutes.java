package dev.airlock.server.rest;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Printable;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.CommandApi;
import dev.airlock.server.command.SandboxView;
import dev.airlock.server.wire.Json;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static dev.airlock.server.policy.Operation.EXEC;

/**
 * The REST door's preview ports (docs/rest-api.md, "Preview ports"): requests to
 * {@code /v1/sandboxes/{id}/ports/{port}/...} as the sandbox's owner, capability links for a
 * browser, and requests through such a link, each decided again as the link's client
 * ({@link Command.OpenPort}), then forwarded by the {@link PortProxy}.
 */
final class PreviewRoutes {

    private static final String SANDBOX = "/v1/sandboxes/{id}";

    private final CommandApi service;
    private final PortProxy ports = new PortProxy();
    private final PreviewLinks links = new PreviewLinks(java.time.Clock.systemUTC());

    PreviewRoutes(CommandApi service) {
        this.service = service;
    }

    /** Its routes: the link first, so that a POST to .../link makes one rather than reaching the sandbox's /link. */
    List<RestRoute> routes() {
        List<RestRoute> table = new ArrayList<>();
        table.add(new RestRoute("POST", SANDBOX + "/ports/{port}/link", EXEC, this::previewLink));
        for (String method : PROXIED_METHODS) {
            table.add(new RestRoute(method, PORT_PATH, EXEC, this::port));
        }
        for (String method : PROXIED_METHODS) {
            table.add(new RestRoute(method, PREVIEW_PATH, null, this::preview));
        }
        return table;
    }

    /** The methods a preview port forwards (any other is a 405). */
    static final List<String> PROXIED_METHODS = List.of("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS");

    static final String PORT_PATH = SANDBOX + "/ports/{port}/" + RestRoute.REST;

    static final String PREVIEW_PATH = "/preview/{token}/" + RestRoute.REST;

    /** The door of requests through a preview link, in audit records. */
    static final String PREVIEW_VIA = "preview";

    /** Ends the preview streams still open. */
    void close() {
        ports.close();
    }

    /** A request to a preview port, forwarded to the server inside the sandbox (docs/rest-api.md, "Preview ports"). */
    private void port(RestCall c) throws IOException {
        int port = port(c.param("port"));
        SandboxView s = c.execute(new Command.OpenPort(c.param("id"), port));
        ports.forward(c.req, c.resp, s, port, target(c.req, RestRoute.segments(SANDBOX + "/ports/{port}").size()));
    }

    /** A preview link: a capability URL for that port, as this client, for a browser (docs/security-model.md, "Preview ports"). */
    private void previewLink(RestCall c) throws IOException {
        int port = port(c.param("port"));
        SandboxView s = c.execute(new Command.OpenPort(c.param("id"), port));
        PreviewLinks.Created made = links.create(c.caller().client().name(), s.id(), port, service::live);
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("event", "preview-link");
        d.put("port", port);
        d.put("expiresAt", made.link().expiresAt().toString());
        dev.airlock.server.policy.Caller.run(c.caller(), () -> service.recordLifecycle(s.id(), d));
        c.send(201, Json.object().put("url", made.url()).put("port", port).put("expiresAt", made.link().expiresAt().toString()));
    }

    /**
     * A request through a preview link: no credential but the link's token, which stands for its
     * client; each request is decided again as that client (which must still hold {@code exec} and
     * own the sandbox, so a link ends with its sandbox) and recorded as the {@value #PREVIEW_VIA} door,
     * folded per link and window: anyone with the link can send thousands a second.
     */
    private void preview(RestCall c) throws IOException {
        PreviewLinks.Link link = links.find(c.param("token"));
        dev.airlock.server.policy.Client client = link == null ? null : service.policy().clients().get(link.client());
        if (client == null) {
            throw new AirlockException(Kind.NOT_FOUND, "no such preview link: it expired (links last "
                    + PreviewLinks.LIFETIME.toMinutes() + " minutes), its sandbox ended, or it was never made;"
                    + " make a new one with POST /v1/sandboxes/{id}/ports/{port}/link (the console's Open preview)");
        }
        String query = c.req.getQueryString() == null ? "" : c.req.getQueryString();
        var caller = service.authorize(new CommandApi.Request(client, PREVIEW_VIA, PREVIEW_VIA, c.req.getMethod() + " " + PREVIEW_PATH,
                EXEC, link.sandbox(), dev.airlock.server.audit.Audit.digest((query + "\n").getBytes(StandardCharsets.UTF_8)), null,
                new CommandApi.Repeats(PREVIEW_VIA + " " + link.client() + " " + link.sandbox() + ":" + link.port(), null)));
        SandboxView s = service.execute(caller, new Command.OpenPort(link.sandbox(), link.port()));
        ports.forward(c.req, c.resp, s, link.port(), target(c.req, RestRoute.segments("/preview/{token}").size()));
    }

    static int port(String s) {
        if (s == null || !s.matches("[0-9]{1,5}") || Integer.parseInt(s) < 1 || Integer.parseInt(s) > 65535) {
            throw AirlockException.invalid("'" + Printable.of(String.valueOf(s)) + "' is not a port: give a number from 1 to 65535, such as 8000");
        }
        return Integer.parseInt(s);
    }

    /**
     * The request's path after its first {@code skip} segments, as the client sent it (still
     * percent-encoded), with its query string: what the sandbox's server is asked for.
     */
    static String target(jakarta.servlet.http.HttpServletRequest req, int skip) {
        String uri = req.getRequestURI();
        int i = 0;
        for (int seen = 0; seen < skip && i < uri.length(); ) {
            while (i < uri.length() && uri.charAt(i) == '/') {
                i++;
            }
            while (i < uri.length() && uri.charAt(i) != '/') {
                i++;
            }
            seen++;
        }
        String path = i >= uri.length() ? "/" : uri.substring(i);
        return req.getQueryString() == null ? path : path + "?" + req.getQueryString();
    }
}
