package dev.airlock.server.policy;

import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The caller is bound for exactly the extent of one authorized call: nothing outside it, on
 * another thread, or after a failure still acts as that client.
 */
class CallerTest {

    private static final Caller ALICE = new Caller(null, "rest", Operation.EXEC, null);
    private static final Caller BOB = new Caller(null, "mcp-stdio", Operation.SANDBOX_READ, null);

    @Test
    void noCallerIsBoundOutsideACall() {
        assertThat(Caller.current()).isNull();
        assertThat(Caller.call(ALICE, Caller::current)).isSameAs(ALICE);
        assertThat(Caller.current()).as("the binding ended with the call").isNull();
    }

    @Test
    void aCallThatThrowsLeavesNoCallerBehind() {
        assertThatThrownBy(() -> Caller.run(ALICE, () -> {
            throw new IllegalStateException("refused");
        })).hasMessage("refused");
        assertThat(Caller.current()).isNull();
    }

    @Test
    void aNestedCallActsAsItsOwnCallerAndTheOuterCallerComesBack() {
        AtomicReference<Caller> inner = new AtomicReference<>();
        Caller after = Caller.call(ALICE, () -> {
            Caller.run(BOB, () -> inner.set(Caller.current()));
            return Caller.current();
        });
        assertThat(inner.get()).isSameAs(BOB);
        assertThat(after).isSameAs(ALICE);
    }

    @Test
    void aThreadStartedInsideACallDoesNotInheritItsCaller() throws Exception {
        CompletableFuture<Caller> seen = new CompletableFuture<>();
        Caller.run(ALICE, () -> Thread.ofVirtual().start(() -> seen.complete(Caller.current())));
        assertThat(seen.get(10, TimeUnit.SECONDS))
                .as("work handed to another thread must bind its caller itself").isNull();
    }

    @Test
    void aPooledThreadKeepsNoCallerFromAnEarlierCall() throws Exception {
        try (var pool = Executors.newSingleThreadExecutor()) {
            pool.submit(() -> Caller.run(ALICE, () -> { })).get();
            assertThat(pool.submit(Caller::current).get()).as("a binding must not outlive its call").isNull();
        }
    }

    @Test
    void theServerActsUnderItsOwnName() {
        assertThat(Caller.SERVER.isServer()).isTrue();
        assertThat(Caller.SERVER.actor()).isEqualTo("server");
    }
}
