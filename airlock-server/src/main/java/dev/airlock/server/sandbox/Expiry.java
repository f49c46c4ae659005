package dev.airlock.server.sandbox;

import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.live.Sandboxes;
import dev.airlock.server.output.OutputStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Instant;
import java.util.function.BooleanSupplier;

/**
 * Every half second, starts the destroy of each expired sandbox on its own thread, so one slow
 * destroy delays no other (an idle one whose profile says {@code onIdle: pauseToDisk} is paused to
 * disk instead, on its own thread too); every minute, sweeps outputs past their retention. Nothing thrown ends
 * the loop; it ends when the server closes.
 */
final class Expiry implements Runnable {

    private static final Logger LOG = LoggerFactory.getLogger(Expiry.class);
    private static final long ROUND_MILLIS = 500;
    /** Rounds between two sweeps of old outputs. */
    private static final int SWEEP_EVERY = 120;

    private final Sandboxes sandboxes;
    private final SandboxTeardown teardown;
    private final OutputStore outputs;
    private final BooleanSupplier closed;
    /** Pauses an idle sandbox of a profile with {@code onIdle: pauseToDisk} to disk instead of destroying it. */
    private final java.util.function.Consumer<ManagedSandbox> park;

    Expiry(Sandboxes sandboxes, SandboxTeardown teardown, OutputStore outputs, BooleanSupplier closed,
           java.util.function.Consumer<ManagedSandbox> park) {
        this.park = park;
        this.sandboxes = sandboxes;
        this.teardown = teardown;
        this.outputs = outputs;
        this.closed = closed;
    }

    @Override
    public void run() {
        long rounds = 0;
        while (!closed.getAsBoolean()) {
            try {
                Thread.sleep(ROUND_MILLIS);
            } catch (InterruptedException e) {
                return;
            }
            if (rounds++ % SWEEP_EVERY == 0) {
                try {
                    outputs.sweep();
                } catch (RuntimeException e) {
                    LOG.warn("could not sweep old outputs: {}", e.getMessage());
                }
            }
            try {
                Instant now = Instant.now();
                for (ManagedSandbox s : sandboxes.values()) {
                    String why = s.destroying() || s.parking() ? null : s.expiryReason(now);
                    if (why != null && s.profile().idleToDisk() && s.idle(now) && now.isBefore(s.expiresAt())) {
                        if (s.startParking()) {
                            Thread.ofVirtual().name("airlock-park-" + s.id()).start(() -> park.accept(s));
                        }
                    } else if (why != null) {
                        teardown.destroyInBackground(s, "expired", "expired: " + why);
                    }
                }
            } catch (Throwable t) {
                LOG.warn("expiry round failed, trying again in 0.5 s: {}", t.toString());
            }
        }
    }
}
