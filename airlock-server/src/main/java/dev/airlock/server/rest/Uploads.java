package dev.airlock.server.rest;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.server.command.Command;
import dev.airlock.server.wire.Json;

import java.io.IOException;
import java.io.InputStream;

/**
 * A file upload ({@code PUT /v1/sandboxes/{id}/files}), streamed into the sandbox as it comes; one
 * refused as too large has the rest of its body read and dropped, within {@link #MAX_DRAIN} bytes,
 * so that the client is still listening when the 413 comes instead of seeing a reset.
 */
final class Uploads {

    /** The most of a refused upload that is read and dropped before the refusal is sent. */
    static final long MAX_DRAIN = 16L << 20;

    private Uploads() {
    }

    static void upload(RestCall c) throws IOException {
        try (InputStream in = c.req.getInputStream()) {
            try {
                c.send(201, Json.file(c.execute(new Command.WriteFile(c.param("id"), c.first("path"), in))));
            } catch (AirlockException e) {
                if (e.kind() == Kind.TOO_LARGE) {
                    // read the rest of the upload (within a bound), so that the client is
                    // still listening when the 413 comes, instead of seeing a reset
                    drain(in);
                }
                throw e;
            }
        }
    }

    static void drain(InputStream in) {
        try {
            byte[] buf = new byte[64 * 1024];
            long read = 0;
            int n;
            while (read < MAX_DRAIN && (n = in.read(buf)) > 0) {
                read += n;
            }
        } catch (IOException e) {
            // the client went away: nothing to answer
        }
    }
}
