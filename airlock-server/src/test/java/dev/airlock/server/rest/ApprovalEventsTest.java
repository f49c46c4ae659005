package dev.airlock.server.rest;

import dev.airlock.core.AirlockException;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/** A client that opens approval event streams until refused cannot take the server's last ones from other clients. */
class ApprovalEventsTest {

    @Test
    void oneClientCannotHoldEveryStream() throws Exception {
        ApprovalEvents events = new ApprovalEvents();
        List<ByteArrayOutputStream> outs = new ArrayList<>();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> open = new ArrayList<>();
            for (int i = 0; i < ApprovalEvents.MAX_PER_CLIENT; i++) {
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                outs.add(out);
                open.add(threads.submit(() -> {
                    events.stream("greedy", out, () -> "{\"approvals\":[]}".getBytes(StandardCharsets.UTF_8));
                    return null;
                }));
            }
            // every stream sent its first event: all are open
            await().until(() -> outs.stream().allMatch(o -> o.toString(StandardCharsets.UTF_8).contains("event: approvals")));

            assertThatThrownBy(() -> events.stream("greedy", OutputStream.nullOutputStream(), () -> new byte[0]))
                    .isInstanceOf(AirlockException.class).hasMessageContaining("client greedy has " + ApprovalEvents.MAX_PER_CLIENT);
            ByteArrayOutputStream other = new ByteArrayOutputStream();
            Future<?> another = threads.submit(() -> {
                events.stream("operator", other, () -> "{\"approvals\":[]}".getBytes(StandardCharsets.UTF_8));
                return null;
            });
            await().until(() -> other.toString(StandardCharsets.UTF_8).contains("event: approvals"));

            events.close();
            for (Future<?> f : open) {
                f.get();
            }
            another.get();
        }
        // the ended streams gave their places back: the client may open one again (it ends at once, the server being closed)
        events.stream("greedy", OutputStream.nullOutputStream(), () -> new byte[0]);
    }
}
