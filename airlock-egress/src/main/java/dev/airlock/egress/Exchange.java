package dev.airlock.egress;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * One request upstream and its response back: the head as the proxy rewrote it, then exactly the
 * body its framing announced, then the response until upstream closes (it was asked to, with
 * {@code Connection: close}). Nothing the client sends after the body is read, so no second
 * request can reach upstream without passing the stages before this one.
 */
final class Exchange {

    private static final int BUFFER = 64 * 1024;

    private final String sandboxId;
    private final int maxLineBytes;

    Exchange(String sandboxId, int maxLineBytes) {
        this.sandboxId = sandboxId;
        this.maxLineBytes = maxLineBytes;
    }

    /**
     * @param request     the head to send, credentials set
     * @param length      the body's length, or -1 for chunked
     * @param credentials the names of the credentials set in {@code request}, for the record once it is sent
     */
    void run(EgressConnection c, byte[] request, long length, List<String> credentials, InputStream fromClient, OutputStream toClient,
             InputStream fromUpstream, OutputStream toUpstream) throws IOException {
        c.startRelaying();
        if (c.cutBy() != null) {
            return;
        }
        toUpstream.write(request);
        toUpstream.flush();
        c.count(c.record.up, request.length);
        c.record.injected(credentials);
        CountDownLatch bodyDone = new CountDownLatch(length == 0 ? 0 : 1);
        Thread downstream = Thread.ofVirtual().name("egress-down-" + sandboxId).start(() -> {
            byte[] buf = new byte[BUFFER];
            try {
                for (int n; (n = fromUpstream.read(buf)) > 0; ) {
                    toClient.write(buf, 0, n);
                    c.count(c.record.down, n);
                }
                toClient.flush();
            } catch (IOException e) {
                c.cut("downstream: " + e.getMessage());
            }
            try {
                // A response that ends before the request body (an early error) ends the exchange.
                if (!bodyDone.await(1, TimeUnit.SECONDS)) {
                    c.cut("response ended before the request body");
                }
            } catch (InterruptedException e) {
                c.cut("interrupted");
            }
        });
        try {
            if (length > 0) {
                HttpBody.copyLength(fromClient, toUpstream, length, n -> c.count(c.record.up, n));
            } else if (length < 0) {
                HttpBody.copyChunked(fromClient, toUpstream, maxLineBytes, n -> c.count(c.record.up, n));
            }
            toUpstream.flush();
        } catch (IOException e) {
            if (c.cutBy() == null) {
                c.cut("upstream: " + e.getMessage());
            }
        } finally {
            bodyDone.countDown();
        }
        Relay.join(downstream);
    }
}
