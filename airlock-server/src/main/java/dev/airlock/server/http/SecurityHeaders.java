package dev.airlock.server.http;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;

/**
 * Headers every answer of the server carries, now that a browser may be signed in to it (the web
 * console): no framing (clickjacking), no content sniffing, no referrer, and nothing cached. The
 * console's pages get a Content-Security-Policy that allows only this server's own scripts,
 * styles and connections (no inline script, no other origin); every other answer one that allows
 * nothing, so a file read out of a sandbox can never run as a page of this origin.
 */
public final class SecurityHeaders implements Filter {

    static final String CONSOLE_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self';"
            + " object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
    static final String API_CSP = "default-src 'none'; frame-ancestors 'none'; sandbox";

    /**
     * The policy of the console's page itself: as every console file's, but a {@code <style>}
     * element applies when it carries {@code styleNonce}, this response's (xterm.js writes its sizes
     * and colours into such elements; the page stamps the nonce on each as it is made). Inline
     * {@code style} attributes and styles without the nonce stay refused.
     */
    public static String consolePage(String styleNonce) {
        if (!styleNonce.matches("[A-Za-z0-9_-]{16,}")) {
            throw new IllegalArgumentException("a style nonce is 16 or more base64url characters");
        }
        return CONSOLE_CSP.replace("style-src 'self';", "style-src 'self' 'nonce-" + styleNonce + "';");
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain) throws IOException, ServletException {
        HttpServletRequest req = (HttpServletRequest) request;
        HttpServletResponse resp = (HttpServletResponse) response;
        String path = req.getRequestURI();
        boolean page = path.equals("/") || path.startsWith("/console/") || path.equals("/console");
        resp.setHeader("Content-Security-Policy", page ? CONSOLE_CSP : API_CSP);
        resp.setHeader("X-Frame-Options", "DENY");
        resp.setHeader("X-Content-Type-Options", "nosniff");
        resp.setHeader("Referrer-Policy", "no-referrer");
        resp.setHeader("Cache-Control", "no-store");
        chain.doFilter(request, response);
    }
}
