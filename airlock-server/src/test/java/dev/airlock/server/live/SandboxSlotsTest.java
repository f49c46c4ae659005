package dev.airlock.server.live;

import dev.airlock.server.policy.Client;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;

/** The one reservation mechanism behind --max-sandboxes and client quotas. */
class SandboxSlotsTest {

    private static Client client(String name, int quota) {
        return new Client(name, new byte[32], List.of("default"), Set.of(), quota, 0);
    }

    private static SandboxSlots.Slot reserved(SandboxSlots.Outcome outcome) {
        assertThat(outcome).isInstanceOf(SandboxSlots.Reserved.class);
        return ((SandboxSlots.Reserved) outcome).slot();
    }

    @Test
    void aThousandConcurrentReservationsGetExactlyTheServerLimit() throws Exception {
        SandboxSlots slots = new SandboxSlots(2);
        Client unlimited = client("a", 0);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<SandboxSlots.Outcome>> outcomes = new ArrayList<>();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < 1000; i++) {
                outcomes.add(threads.submit(() -> {
                    go.await();
                    return reserved(slots.reserveForClient(unlimited)).takeServerSlot();
                }));
            }
            go.countDown();
        }
        int granted = 0;
        for (Future<SandboxSlots.Outcome> f : outcomes) {
            if (f.get() instanceof SandboxSlots.Reserved) {
                granted++;
            } else {
                assertThat(f.get()).isEqualTo(new SandboxSlots.ServerFull(2, 2));
            }
        }
        assertThat(granted).isEqualTo(2);
        assertThat(slots.held()).isEqualTo(2);
    }

    /**
     * A create at the limit whose slots are held by a sandbox being torn down waits for its slot
     * (a client that deletes and creates again gets its sandbox); held by live sandboxes only, it is
     * refused at once, as before.
     */
    @Test
    void aCreateAtTheLimitWaitsForASlotBeingTornDownAndOnlyForThat() throws Exception {
        SandboxSlots slots = new SandboxSlots(1);
        Client quota1 = client("q", 1);
        SandboxSlots.Slot live = reserved(slots.reserveForClient(quota1));
        assertThat(live.takeServerSlot()).isInstanceOf(SandboxSlots.Reserved.class);

        assertThat(slots.reserveForClient(quota1)).isEqualTo(new SandboxSlots.ClientQuotaReached(1, 1));

        live.tearingDown();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<SandboxSlots.Outcome> next = threads.submit(() -> {
                SandboxSlots.Slot slot = reserved(slots.reserveForClient(quota1));
                return slot.takeServerSlot();
            });
            Thread.sleep(200);
            assertThat(next).as("waiting for the slot being torn down").isNotDone();
            live.release();
            assertThat(next.get(5, java.util.concurrent.TimeUnit.SECONDS)).isInstanceOf(SandboxSlots.Reserved.class);
        }
        assertThat(slots.held()).isEqualTo(1);
    }

    @Test
    void aClientQuotaCountsSlotsUntilTheyAreReleasedOnceEach() {
        SandboxSlots slots = new SandboxSlots(10);
        Client quota2 = client("q", 2);
        SandboxSlots.Slot first = reserved(slots.reserveForClient(quota2));
        SandboxSlots.Slot second = reserved(slots.reserveForClient(quota2));
        assertThat(slots.reserveForClient(quota2)).isEqualTo(new SandboxSlots.ClientQuotaReached(2, 2));
        assertThat(reserved(slots.reserveForClient(client("other", 1)))).isNotNull();

        first.release();
        first.release();   // a second release gives nothing back twice
        SandboxSlots.Slot third = reserved(slots.reserveForClient(quota2));
        assertThat(slots.reserveForClient(quota2)).isEqualTo(new SandboxSlots.ClientQuotaReached(2, 2));
        second.release();
        third.release();
    }

    @Test
    void theServerSlotIsGivenBackWithTheClientSlot() {
        SandboxSlots slots = new SandboxSlots(1);
        SandboxSlots.Slot held = reserved(reserved(slots.reserveForClient(client("a", 0))).takeServerSlot());
        SandboxSlots.Slot waiting = reserved(slots.reserveForClient(client("b", 0)));
        assertThat(waiting.takeServerSlot()).isEqualTo(new SandboxSlots.ServerFull(1, 1));

        held.release();
        assertThat(slots.held()).isZero();
        assertThat(waiting.takeServerSlot()).isInstanceOf(SandboxSlots.Reserved.class);
        assertThat(slots.held()).isEqualTo(1);
    }
}
