package dev.airlock.server.http;

import dev.airlock.core.Printable;
import jakarta.servlet.http.HttpServletRequest;

import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * DNS-rebinding and cross-site protection shared by the doors a browser can reach (/mcp, and the
 * console's cookie-authenticated requests, a terminal's WebSocket): the Host header must name this server (its bind
 * address, its local address, localhost, 127.0.0.1 or [::1], with its port), and an Origin header,
 * if sent, must be a loopback origin. A page an attacker serves cannot pass both.
 */
public final class LocalOrigin {

    private static final Pattern LOOPBACK_ORIGIN = Pattern.compile("https?://(localhost|127\\.0\\.0\\.1|\\[::1\\])(:\\d{1,5})?",
            Pattern.CASE_INSENSITIVE);

    private LocalOrigin() {
    }

    /** Why {@code req} is refused, or null when its Host and Origin pass. */
    public static String refusal(HttpServletRequest req, String bindHost) {
        String host = hostRefusal(req, bindHost);
        if (host != null) {
            return host;
        }
        String origin = req.getHeader("Origin");
        if (origin != null && !LOOPBACK_ORIGIN.matcher(origin).matches()) {
            return "Origin '" + Printable.of(origin, 100) + "' is not allowed: only local origins (http://localhost,"
                    + " http://127.0.0.1, http://[::1]) may call this server (DNS-rebinding protection)";
        }
        return null;
    }

    /**
     * Why a request of the web console is refused, or null: its sign-in, a request carrying its
     * session cookie, a terminal's WebSocket. As {@link #refusal}, and an Origin, if sent, must be
     * this server's own, exactly: the scheme and the Host the request came to, port included. A page
     * served from another port of the same host is another origin, and a browser sends the
     * console's SameSite cookie to it all the same (SameSite knows sites, not ports).
     */
    public static String consoleRefusal(HttpServletRequest req, String bindHost) {
        String host = hostRefusal(req, bindHost);
        if (host != null) {
            return host;
        }
        String origin = req.getHeader("Origin");
        String own = (req.isSecure() ? "https://" : "http://") + req.getHeader("Host").trim();
        if (origin != null && !origin.equalsIgnoreCase(own)) {
            return "Origin '" + Printable.of(origin, 100) + "' is not allowed: it is not this server's own (" + Printable.of(own, 100)
                    + "), and the console's sign-in, session and terminals answer only its own pages (cross-site protection)";
        }
        return null;
    }

    private static String hostRefusal(HttpServletRequest req, String bindHost) {
        String host = req.getHeader("Host");
        if (host == null || !hostAllowed(host, req, bindHost)) {
            return "Host header '" + (host == null ? "" : Printable.of(host, 100)) + "' does not name this server: connect to it as localhost,"
                    + " 127.0.0.1, its bind address or a name of its TLS certificate, with its port (DNS-rebinding protection)";
        }
        return null;
    }

    private static boolean hostAllowed(String host, HttpServletRequest req, String bindHost) {
        String h = host.trim().toLowerCase(Locale.ROOT);
        int port = req.getLocalPort();
        List<String> names = new java.util.ArrayList<>(List.of("localhost", "127.0.0.1", "[::1]", uriHost(bindHost), uriHost(req.getLocalAddr())));
        if (req.getAttribute(ApiTls.NAMES) instanceof List<?> published) {
            published.forEach(n -> names.add(String.valueOf(n)));   // the names of the certificate the port serves (--tls-cert)
        }
        int standard = req.isSecure() ? 443 : 80;
        for (String name : names) {
            if (h.equals(name + ":" + port) || (port == standard && h.equals(name))) {
                return true;
            }
        }
        return false;
    }

    private static String uriHost(String address) {
        String a = address == null ? "" : address.toLowerCase(Locale.ROOT);
        return a.contains(":") && !a.startsWith("[") ? "[" + a + "]" : a;
    }
}
