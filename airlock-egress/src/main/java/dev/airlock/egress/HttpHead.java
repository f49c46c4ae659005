package dev.airlock.egress;

import dev.airlock.core.Credential;
import dev.airlock.core.Printable;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The request line and headers of one HTTP/1.x request to the proxy, read byte by byte within a
 * bound. Strict on purpose: anything ambiguous (folded headers, two Host headers, user info in the
 * target, a Host that differs from the target) is refused rather than interpreted.
 */
record HttpHead(String method, String target, String version, List<String[]> headers) {

    /** Hop-by-hop headers (RFC 9110 7.6.1) and proxy credentials: never forwarded. */
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-connection", "te", "trailer",
            "upgrade", "proxy-authorization", "proxy-authenticate");

    /**
     * Headers through which common frameworks let a request act as another method (compared with
     * '_' as '-', since CGI-style servers do not tell them apart).
     */
    private static final Set<String> METHOD_OVERRIDES = Set.of("x-http-method-override", "x-http-method", "x-method-override");

    /** An HTTP token (RFC 9110 5.6.2): what a method must be. */
    private static final java.util.regex.Pattern TOKEN = java.util.regex.Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}");

    static final class Malformed extends Exception {
        Malformed(String message) {
            super(message, null, false, false);
        }
    }

    @FunctionalInterface
    interface ByteSource {
        int read() throws IOException;
    }

    record Authority(String host, int port) {
        /** host[:port] as a Host header would carry it. */
        String hostHeader(int defaultPort) {
            String h = host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host;
            return port == defaultPort ? h : h + ":" + port;
        }
    }

    static HttpHead read(ByteSource in, int max) throws IOException, Malformed {
        List<String> lines = new ArrayList<>();
        StringBuilder line = new StringBuilder();
        int total = 0;
        while (true) {
            int b = in.read();
            if (++total > max) {
                throw new Malformed("request head larger than " + max + " bytes");
            }
            if (b == '\n') {
                int len = line.length();
                if (len > 0 && line.charAt(len - 1) == '\r') {
                    line.setLength(len - 1);
                }
                if (line.isEmpty()) {
                    if (lines.isEmpty()) {
                        continue;      // tolerated: a blank line before the request line
                    }
                    break;
                }
                lines.add(line.toString());
                line.setLength(0);
            } else if (b == 0) {
                throw new Malformed("NUL byte in request head");
            } else {
                line.append((char) b);
            }
        }
        String[] requestLine = lines.getFirst().split(" ", -1);
        if (requestLine.length != 3 || !requestLine[2].startsWith("HTTP/1.")) {
            throw new Malformed("not an HTTP/1.x request line");
        }
        if (!TOKEN.matcher(requestLine[0]).matches()) {
            throw new Malformed("the method '" + Printable.of(requestLine[0]) + "' is not an HTTP token");
        }
        List<String[]> headers = new ArrayList<>();
        for (String h : lines.subList(1, lines.size())) {
            if (h.startsWith(" ") || h.startsWith("\t")) {
                throw new Malformed("folded header lines are not accepted");
            }
            int colon = h.indexOf(':');
            if (colon <= 0 || h.substring(0, colon).strip().length() != colon || h.indexOf('\r') >= 0) {
                throw new Malformed("malformed header line");
            }
            headers.add(new String[] {h.substring(0, colon), h.substring(colon + 1).strip()});
        }
        return new HttpHead(requestLine[0], requestLine[1], requestLine[2], headers);
    }

    Authority connectTarget() throws Malformed {
        return authority(target, -1);
    }

    /** The authority of an absolute-form {@code http://} target. */
    Authority absoluteTarget() throws Malformed {
        if (!target.regionMatches(true, 0, "http://", 0, 7)) {
            if (target.regionMatches(true, 0, "https://", 0, 8)) {
                throw new Malformed("https:// targets need a CONNECT tunnel; this proxy does not originate TLS");
            }
            throw new Malformed("a proxy request needs an absolute http:// target (or CONNECT)");
        }
        String rest = target.substring(7);
        int end = indexOfAny(rest, "/?#");
        return authority(end < 0 ? rest : rest.substring(0, end), 80);
    }

    /** The request to send the origin: origin-form target, hop-by-hop headers gone, Connection: close. */
    byte[] originForm(Authority authority) {
        return originForm(authority, List.of());
    }

    /** As {@link #originForm(Authority)}, with each credential's header set to its value (any sent one dropped). */
    byte[] originForm(Authority authority, List<Credential> inject) {
        return forward(originPath(), authority, 80, inject);
    }

    /** The path and query of an absolute-form {@code http://} target, as the origin gets it. */
    String originPath() {
        String rest = target.substring(7);
        int end = indexOfAny(rest, "/?#");
        String path = end < 0 ? "/" : rest.substring(end);
        if (path.startsWith("?")) {
            path = "/" + path;
        }
        int fragment = path.indexOf('#');
        if (fragment >= 0) {
            path = path.substring(0, fragment);
        }
        return path;
    }

    /**
     * The methods this request may act as: its own, then each one an override header names
     * ({@code X-HTTP-Method-Override}, {@code X-HTTP-Method}, {@code X-Method-Override}, any case,
     * '_' for '-', comma-separated values split). A value that is not a method is refused.
     */
    List<String> methods() throws Malformed {
        List<String> out = new ArrayList<>();
        out.add(method);
        for (String[] h : headers) {
            if (METHOD_OVERRIDES.contains(h[0].toLowerCase(Locale.ROOT).replace('_', '-'))) {
                for (String value : h[1].split(",", -1)) {
                    String m = value.strip();
                    if (!TOKEN.matcher(m).matches()) {
                        throw new Malformed("the method override '" + Printable.of(h[1]) + "' is not an HTTP method");
                    }
                    out.add(m);
                }
            }
        }
        return out;
    }

    /**
     * The target of a request inside a tunnel to one origin: origin-form only ({@code *} for
     * OPTIONS), so the request cannot name another host than the tunnel's.
     */
    String tunnelTarget() throws Malformed {
        if (method.equals("CONNECT")) {
            throw new Malformed("CONNECT inside a tunnel is not accepted");
        }
        if (target.startsWith("/") || (target.equals("*") && method.equals("OPTIONS"))) {
            if (target.indexOf('#') >= 0) {
                return target.substring(0, target.indexOf('#'));
            }
            return target;
        }
        throw new Malformed("a request inside a tunnel needs an origin-form target (/path), not '" + Printable.of(target) + "'");
    }

    /** TRACE (and the old TRACK) make the origin echo the request back, an injected header with it. */
    boolean echoesRequest() {
        return method.equalsIgnoreCase("TRACE") || method.equalsIgnoreCase("TRACK");
    }

    /** Request body framing: -1 for chunked, else the content length (0 without a body). */
    long bodyLength() throws Malformed {
        String length = null;
        String encoding = null;
        for (String[] h : headers) {
            if (h[0].equalsIgnoreCase("content-length")) {
                if (!h[1].matches("[0-9]{1,18}") || (length != null && !length.equals(h[1]))) {
                    throw new Malformed("invalid or conflicting Content-Length");
                }
                length = h[1];
            } else if (h[0].equalsIgnoreCase("transfer-encoding")) {
                if (encoding != null || !h[1].equalsIgnoreCase("chunked")) {
                    throw new Malformed("only 'Transfer-Encoding: chunked' is accepted");
                }
                encoding = h[1];
            }
        }
        if (encoding != null) {
            if (length != null) {
                throw new Malformed("both Content-Length and Transfer-Encoding");
            }
            if (!version.equals("HTTP/1.1")) {
                throw new Malformed("Transfer-Encoding needs HTTP/1.1");
            }
            return -1;
        }
        return length == null ? 0 : Long.parseLong(length);
    }

    /**
     * {@code path} with this request's end-to-end headers, Host (added when missing), each
     * credential's header (replacing any the sandbox sent) and Connection: close.
     */
    byte[] forward(String path, Authority authority, int defaultPort, List<Credential> inject) {
        Set<String> named = new HashSet<>();
        for (String[] h : headers) {
            if (h[0].equalsIgnoreCase("connection")) {
                for (String token : h[1].split(",")) {
                    named.add(token.strip().toLowerCase(Locale.ROOT));
                }
            }
        }
        StringBuilder out = new StringBuilder();
        out.append(method).append(' ').append(path).append(' ').append(version).append("\r\n");
        boolean host = false;
        for (String[] h : headers) {
            String name = h[0].toLowerCase(Locale.ROOT);
            if (HOP_BY_HOP.contains(name) || name.startsWith("proxy-") || named.contains(name)
                    || inject.stream().anyMatch(c -> c.header().equalsIgnoreCase(name))) {
                continue;
            }
            host |= name.equals("host");
            out.append(h[0]).append(": ").append(h[1]).append("\r\n");
        }
        if (!host) {
            out.append("Host: ").append(authority.hostHeader(defaultPort)).append("\r\n");
        }
        for (Credential c : inject) {
            out.append(c.header()).append(": ").append(c.value().reveal()).append("\r\n");
        }
        out.append("Connection: close\r\n\r\n");
        return out.toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    /** A Host header, if any, must name the target: otherwise the request is ambiguous. */
    void checkHostHeader(Authority target) throws Malformed {
        String host = null;
        for (String[] h : headers) {
            if (h[0].equalsIgnoreCase("host")) {
                if (host != null) {
                    throw new Malformed("more than one Host header");
                }
                host = h[1];
            }
        }
        if (host == null) {
            return;
        }
        Authority claimed;
        try {
            claimed = authority(host, target.port());
        } catch (Malformed e) {
            throw new Malformed("Host header '" + Printable.of(host) + "' is not a host");
        }
        if (!EgressRules.normalize(claimed.host()).equals(EgressRules.normalize(target.host())) || claimed.port() != target.port()) {
            throw new Malformed("Host header '" + Printable.of(host) + "' differs from the request target "
                    + Printable.of(target.host()) + ":" + target.port());
        }
    }

    /** host:port, [v6]:port, or host alone when {@code defaultPort} is not -1. */
    static Authority authority(String s, int defaultPort) throws Malformed {
        if (s.isEmpty() || s.indexOf('@') >= 0) {
            throw new Malformed("target '" + Printable.of(s) + "' is not host:port (user info is not accepted)");
        }
        String host;
        String portPart = null;
        if (s.startsWith("[")) {
            int close = s.indexOf(']');
            if (close < 0) {
                throw new Malformed("unterminated IPv6 literal in '" + Printable.of(s) + "'");
            }
            host = s.substring(0, close + 1);
            String after = s.substring(close + 1);
            if (!after.isEmpty()) {
                if (!after.startsWith(":")) {
                    throw new Malformed("target '" + Printable.of(s) + "' is not host:port");
                }
                portPart = after.substring(1);
            }
        } else {
            int colon = s.lastIndexOf(':');
            if (colon >= 0 && s.indexOf(':') != colon) {
                throw new Malformed("an IPv6 literal must be in brackets: '" + Printable.of(s) + "'");
            }
            host = colon < 0 ? s : s.substring(0, colon);
            portPart = colon < 0 ? null : s.substring(colon + 1);
        }
        int port;
        if (portPart == null) {
            if (defaultPort < 0) {
                throw new Malformed("target '" + Printable.of(s) + "' has no port");
            }
            port = defaultPort;
        } else {
            if (!portPart.matches("[0-9]{1,5}")) {
                throw new Malformed("target '" + Printable.of(s) + "' has no valid port");
            }
            port = Integer.parseInt(portPart);
            if (port < 1 || port > 65535) {
                throw new Malformed("port " + port + " is out of range");
            }
        }
        if (host.isEmpty()) {
            throw new Malformed("target '" + Printable.of(s) + "' has no host");
        }
        return new Authority(host, port);
    }

    private static int indexOfAny(String s, String chars) {
        for (int i = 0; i < s.length(); i++) {
            if (chars.indexOf(s.charAt(i)) >= 0) {
                return i;
            }
        }
        return -1;
    }
}
