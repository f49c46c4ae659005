package dev.airlock.server.live;

import dev.airlock.core.Engine;
import dev.airlock.core.Isolation;
import dev.airlock.core.IsolationDriver;
import dev.airlock.core.Language;
import dev.airlock.core.SandboxAgent;
import dev.airlock.core.SandboxBroker;
import dev.airlock.core.SandboxId;
import dev.airlock.core.SandboxSpec;
import dev.airlock.server.policy.Profile;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * What tests outside this package need of its package-private parts: sandbox slots with a
 * server limit, and a {@link ManagedSandbox} over a driver that starts nothing (no process, no
 * agent), for controls that only read a sandbox's id, profile and times.
 */
public final class ServerFixtures {

    private ServerFixtures() {
    }

    /** Slots for a server started with {@code --max-sandboxes serverMax}. */
    public static SandboxSlots slots(int serverMax) {
        return new SandboxSlots(serverMax);
    }

    /** A sandbox of {@code owner} under {@code profile}, created at {@code createdAt}; it runs nothing and must not be used to. */
    public static ManagedSandbox sandbox(String owner, Profile profile, Instant createdAt, Duration ttl, Language defaultLanguage) {
        // Its broker attaches nothing: the sandbox keeps its profile's network policy, and no proxy runs.
        Engine engine = new Engine(new InertDriver(), (id, spec, runDir, uid) -> SandboxBroker.Attachment.NONE);
        SandboxSpec spec = new SandboxSpec(profile.image(), profile.limits(), Map.of(), profile.network(), List.of(), List.of(), List.of());
        return new ManagedSandbox(engine.create(spec), owner, profile, Map.of(), createdAt, ttl, Duration.ofMinutes(10), defaultLanguage,
                engine.driver().isolation(), null);
    }

    /** A driver whose sandboxes are only ids: nothing is started, and nothing can run in them. */
    static final class InertDriver implements IsolationDriver {
        @Override
        public String name() {
            return "inert";
        }

        @Override
        public Isolation isolation() {
            return Isolation.CONTAINER;
        }

        @Override
        public String instance() {
            return "test";
        }

        @Override
        public void check(SandboxSpec spec, List<String> requiredPrograms) {
        }

        @Override
        public DriverSandbox create(SandboxId id, SandboxSpec spec, SandboxBroker broker) {
            broker.attach(id, spec, null, -1);
            return new DriverSandbox() {
                @Override
                public SandboxId id() {
                    return id;
                }

                @Override
                public SandboxAgent agent() {
                    throw new UnsupportedOperationException("an inert test sandbox has no agent");
                }

                @Override
                public long oomKills() {
                    return 0;
                }

                @Override
                public void destroy() {
                }
            };
        }

        @Override
        public List<String> reapOrphans() {
            return List.of();
        }

        @Override
        public boolean isAlive(String instance) {
            return instance.equals(instance());
        }

        @Override
        public void close() {
        }
    }
}
