package dev.airlock.client;

import java.net.URI;
import java.time.Instant;

/**
 * A preview link to a port of a sandbox ({@link RemoteSandbox#previewLink(int)}): a capability
 * URL that reaches the web server listening on that port inside the sandbox with no other
 * credential, until {@link #expiresAt()} (an hour) or the end of the sandbox. Whoever holds the
 * URL reaches the port as the client that made it: hand it only to whom may see the sandbox.
 *
 * @param url       the absolute URL, {@code http://server/preview/<token>/}
 * @param port      the port inside the sandbox
 * @param expiresAt when it stops working, at the latest
 */
public record PreviewLink(URI url, int port, Instant expiresAt) {
}
