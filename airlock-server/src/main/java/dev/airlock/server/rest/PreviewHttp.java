package dev.airlock.server.rest;

import dev.airlock.server.http.ConsoleSessions;
import dev.airlock.server.wire.Json;
import jakarta.servlet.http.HttpServletRequest;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * HTTP/1.1 as the preview proxy speaks it to the server in a sandbox: the request head it sends
 * (without the client's credentials or hop-by-hop headers), the answer's head read within a bound,
 * and bodies copied or re-chunked as they come, never held whole. Everything read is untrusted.
 */
final class PreviewHttp {

    /** Request headers the sandbox never sees: hop-by-hop ones, and the client's credentials for this server. */
    static final Set<String> DROPPED_REQUEST = Set.of("connection", "keep-alive", "proxy-connection", "proxy-authenticate",
            "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "content-length", "host",
            "cookie", "authorization", ConsoleSessions.CSRF_HEADER.toLowerCase(Locale.ROOT));

    /** Response headers the client never sees: hop-by-hop ones, cookies, those this server sets itself, and those that act on its origin. */
    static final Set<String> DROPPED_RESPONSE = Set.of("connection", "keep-alive", "proxy-connection", "proxy-authenticate",
            "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "content-length", "set-cookie", "set-cookie2",
            "content-security-policy", "content-security-policy-report-only", "x-frame-options", "x-content-type-options",
            "referrer-policy", "cache-control", "date", "server", "strict-transport-security",
            // what would act on this server's origin beyond the page: wiping the console's cookies and storage, widening a service worker's scope
            "clear-site-data", "service-worker-allowed");

    private PreviewHttp() {
    }

    /** The request line and headers for the sandbox's server. */
    static byte[] requestHead(HttpServletRequest req, int port, String target, String upgrade) {
        StringBuilder b = new StringBuilder();
        b.append(req.getMethod()).append(' ').append(target).append(" HTTP/1.1\r\n");
        b.append("Host: localhost:").append(port).append("\r\n");
        Set<String> connectionTokens = tokens(Collections.list(req.getHeaders("Connection")));
        for (String name : Collections.list(req.getHeaderNames())) {
            String lower = name.toLowerCase(Locale.ROOT);
            if (DROPPED_REQUEST.contains(lower) || connectionTokens.contains(lower)) {
                continue;
            }
            for (String value : Collections.list(req.getHeaders(name))) {
                b.append(name).append(": ").append(value).append("\r\n");
            }
        }
        long length = req.getContentLengthLong();
        if (length >= 0) {
            b.append("Content-Length: ").append(length).append("\r\n");
        } else if (req.getHeader("Transfer-Encoding") != null) {
            b.append("Transfer-Encoding: chunked\r\n");
        }
        if (upgrade != null) {
            b.append("Upgrade: ").append(upgrade).append("\r\nConnection: Upgrade\r\n");
        } else {
            b.append("Connection: close\r\n");
        }
        b.append("\r\n");
        return b.toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    static Set<String> tokens(List<String> values) {
        Set<String> out = new HashSet<>();
        for (String v : values) {
            for (String t : v.split(",")) {
                if (!t.isBlank()) {
                    out.add(t.trim().toLowerCase(Locale.ROOT));
                }
            }
        }
        return out;
    }

    /** Copies a request body of {@code length} bytes (or chunked, re-chunked); false when it is over {@link PortProxy#MAX_BODY}. */
    static boolean copyBody(InputStream in, OutputStream out, long length, boolean chunked) throws IOException {
        byte[] buf = new byte[16 * 1024];
        long sent = 0;
        int n;
        while ((length < 0 || sent < length) && (n = in.read(buf, 0, (int) (length < 0 ? buf.length : Math.min(buf.length, length - sent)))) > 0) {
            sent += n;
            if (sent > PortProxy.MAX_BODY) {
                return false;
            }
            if (chunked) {
                out.write((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
                out.write(buf, 0, n);
                out.write("\r\n".getBytes(StandardCharsets.ISO_8859_1));
            } else {
                out.write(buf, 0, n);
            }
        }
        if (chunked) {
            out.write("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
        }
        return true;
    }

    static void copy(InputStream in, OutputStream out, long n) throws IOException {
        byte[] buf = new byte[16 * 1024];
        long left = n;
        while (left > 0) {
            int r = in.read(buf, 0, (int) Math.min(buf.length, left));
            if (r < 0) {
                throw new IOException("the server in the sandbox ended its answer " + left + " bytes short of its Content-Length");
            }
            out.write(buf, 0, r);
            left -= r;
        }
    }

    /** Copies to the end, flushing what came: an answer without a length may be a stream of events. */
    static void copyFlushing(InputStream in, OutputStream out) throws IOException {
        byte[] buf = new byte[16 * 1024];
        int r;
        while ((r = in.read(buf)) >= 0) {
            out.write(buf, 0, r);
            if (in.available() == 0) {
                out.flush();
            }
        }
    }

    /** A header's name, as HTTP defines a token. */
    static final java.util.regex.Pattern HEADER_NAME = java.util.regex.Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");

    /** The status line and headers of the sandbox server's answer, read within {@link PortProxy#MAX_HEADERS} bytes. */
    record ResponseHead(int status, List<String[]> headers) {

        String header(String name) {
            for (String[] h : headers) {
                if (h[0].equalsIgnoreCase(name)) {
                    return h[1];
                }
            }
            return null;
        }

        Set<String> connectionTokens() {
            List<String> values = new ArrayList<>();
            headers.stream().filter(h -> h[0].equalsIgnoreCase("Connection")).forEach(h -> values.add(h[1]));
            return tokens(values);
        }

        static ResponseHead read(InputStream in) throws IOException {
            int[] used = {0};
            String statusLine = line(in, used);
            if (statusLine == null) {
                throw new IOException("closed before answering");
            }
            String[] parts = statusLine.split(" ", 3);
            if (parts.length < 2 || !parts[0].startsWith("HTTP/1.") || !parts[1].matches("[1-5][0-9][0-9]")) {
                throw new BadResponse("its status line is '" + Json.printable(statusLine.length() > 80 ? statusLine.substring(0, 80) : statusLine) + "'");
            }
            List<String[]> headers = new ArrayList<>();
            String l;
            while ((l = line(in, used)) != null && !l.isEmpty()) {
                int colon = l.indexOf(':');
                if (colon <= 0 || !HEADER_NAME.matcher(l.substring(0, colon)).matches()) {
                    throw new BadResponse("a header line is malformed: '" + Json.printable(l.length() > 80 ? l.substring(0, 80) : l) + "'");
                }
                String value = l.substring(colon + 1).trim();
                if (value.chars().anyMatch(ch -> (ch < 0x20 && ch != '\t') || ch == 0x7f)) {
                    throw new BadResponse("header " + Json.printable(l.substring(0, colon)) + " holds a control character");
                }
                headers.add(new String[]{l.substring(0, colon), value});
            }
            if (l == null) {
                throw new BadResponse("it closed the connection within its headers");
            }
            return new ResponseHead(Integer.parseInt(parts[1]), headers);
        }

        /** One line without its CRLF; null at the end of the stream before any byte. */
        private static String line(InputStream in, int[] used) throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            int c;
            while ((c = in.read()) >= 0) {
                if (++used[0] > PortProxy.MAX_HEADERS) {
                    throw new BadResponse("its headers are over " + PortProxy.MAX_HEADERS + " bytes");
                }
                if (c == '\n') {
                    byte[] bytes = b.toByteArray();
                    int len = bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
                    return new String(bytes, 0, len, StandardCharsets.ISO_8859_1);
                }
                b.write(c);
            }
            if (b.size() > 0) {
                throw new BadResponse("it closed the connection within a header line");
            }
            return null;
        }
    }

    /** The sandbox's server answered something that is not HTTP/1.x, or too much of it. */
    static final class BadResponse extends IOException {
        BadResponse(String message) {
            super(message);
        }
    }

    /** A chunked body, decoded and written on (the client's connection chunks it again as it needs). */
    static final class Chunked {
        static void copy(InputStream in, OutputStream out) throws IOException {
            int[] used = {0};
            while (true) {
                used[0] = 0;
                String size = ResponseHead.line(in, used);
                if (size == null) {
                    throw new IOException("the chunked answer ended without its last chunk");
                }
                int semi = size.indexOf(';');
                long n;
                try {
                    n = Long.parseLong((semi >= 0 ? size.substring(0, semi) : size).trim(), 16);
                } catch (NumberFormatException e) {
                    throw new BadResponse("a chunk size is not hexadecimal");
                }
                if (n < 0) {
                    throw new BadResponse("a chunk size is negative");
                }
                if (n == 0) {
                    String trailer;
                    do {
                        used[0] = 0;
                        trailer = ResponseHead.line(in, used);
                    } while (trailer != null && !trailer.isEmpty());
                    return;
                }
                PreviewHttp.copy(in, out, n);
                out.flush();
                used[0] = 0;
                ResponseHead.line(in, used); // the CRLF after the chunk
            }
        }
    }
}
