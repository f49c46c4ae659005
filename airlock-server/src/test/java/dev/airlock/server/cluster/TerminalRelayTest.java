package dev.airlock.server.cluster;

import org.eclipse.jetty.websocket.api.Callback;
import org.eclipse.jetty.websocket.api.Session;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Proxy;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The relay's bound on what a client makes it hold: against another node that takes nothing (its
 * sends never complete), a client that goes on typing is closed with 1008 once
 * {@value TerminalRelay#MAX_QUEUED} messages wait, and nothing more is taken from it.
 */
class TerminalRelayTest {

    @Test
    void aClientThatSendsWhileTheOtherNodeTakesNothingIsClosedOnceTheBoundIsReached() {
        List<String> closes = new CopyOnWriteArrayList<>();
        int[] sentUp = {0};
        // the other node's socket: every send accepted and never completed, as a node that stopped reading
        WebSocket stalled = (WebSocket) Proxy.newProxyInstance(WebSocket.class.getClassLoader(), new Class<?>[] {WebSocket.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "sendBinary", "sendText" -> {
                        sentUp[0]++;
                        yield new CompletableFuture<WebSocket>();
                    }
                    case "sendClose" -> CompletableFuture.completedFuture(proxy);
                    default -> null;
                });
        Session client = (Session) Proxy.newProxyInstance(Session.class.getClassLoader(), new Class<?>[] {Session.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("close") && args != null && args.length == 3) {
                        closes.add(args[0] + " " + args[1]);
                    }
                    return method.getReturnType() == boolean.class ? false : null;
                });
        TerminalRelay relay = new TerminalRelay("beta", listener -> CompletableFuture.completedFuture(stalled));
        relay.onWebSocketOpen(client);
        for (int i = 0; i < 1000 && closes.isEmpty(); i++) {
            relay.onWebSocketBinary(ByteBuffer.wrap(new byte[60 * 1024]), Callback.NOOP);
        }
        assertThat(closes).hasSize(1);
        assertThat(closes.getFirst()).startsWith("1008 ").contains("more than " + TerminalRelay.MAX_QUEUED + " messages wait for node 'beta'");
        // the first went up and the rest wait behind it: at most the bound was taken
        assertThat(sentUp[0]).isEqualTo(1);
    }
}
