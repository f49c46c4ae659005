package dev.airlock.core;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static dev.airlock.core.Refusals.invalid;
import static dev.airlock.core.Refusals.refused;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The engine owns the sandbox broker: the driver attaches each sandbox to it once, and the engine
 * closes the attachment when the sandbox is gone or its creation failed, and sends network
 * changes to it. Checked against a driver that starts nothing.
 */
class EngineBrokerTest {

    static final NetworkPolicy SOME_NETWORK = NetworkPolicy.of(List.of(NetworkPolicy.Destination.of("example.com")), List.of(),
            List.of(), Map.of());

    /** What happened, in order, across driver and broker. */
    final List<String> events = new ArrayList<>();

    @Test
    void anEngineWithoutBrokerRefusesASpecWithNetwork() {
        try (Engine engine = new Engine(new FakeDriver(events, true, false))) {
            refused(AirlockException.Kind.UNAVAILABLE, () -> engine.create(SandboxSpec.defaults().withNetwork(SOME_NETWORK)),
                    "asks for network", "no egress broker");
            try (Sandbox sb = engine.create(SandboxSpec.defaults())) {
                refused(AirlockException.Kind.CONFLICT, () -> sb.updateNetworkPolicy(SOME_NETWORK), "created without network");
                sb.updateNetworkPolicy(NetworkPolicy.NONE);
            }
        }
        assertThat(events).containsExactly("destroy");
    }

    @Test
    void theAttachmentIsClosedAfterTheSandboxIsDestroyedAndGetsNetworkChanges() {
        try (Engine engine = new Engine(new FakeDriver(events, true, false), new RecordingBroker(events))) {
            try (Sandbox sb = engine.create(SandboxSpec.defaults().withNetwork(SOME_NETWORK))) {
                sb.updateNetworkPolicy(NetworkPolicy.NONE);
                assertThat(sb.network()).isEqualTo(NetworkPolicy.NONE);
            }
        }
        assertThat(events).containsExactly("attach", "update", "destroy", "close");
    }

    @Test
    void aFailedCreateClosesTheAttachment() {
        try (Engine engine = new Engine(new FakeDriver(events, true, true), new RecordingBroker(events))) {
            refused(AirlockException.Kind.UNAVAILABLE, () -> engine.create(SandboxSpec.defaults()), "the runtime failed");
        }
        assertThat(events).containsExactly("attach", "close");
    }

    @Test
    void aDriverThatDoesNotAttachBreaksItsContractAndLeavesNothing() {
        try (Engine engine = new Engine(new FakeDriver(events, false, false), new RecordingBroker(events))) {
            assertThatThrownBy(() -> engine.create(SandboxSpec.defaults())).hasMessageContaining("without attaching it");
        }
        assertThat(events).containsExactly("destroy");
    }

    @Test
    void credentialsWithoutNetworkAreRefusedBeforeAnythingStarts() {
        Credential c = new Credential("api", List.of(NetworkPolicy.Destination.of("example.com")), "Authorization", new Secret("s3cret"));
        try (Engine engine = new Engine(new FakeDriver(events, true, false), new RecordingBroker(events))) {
            invalid(() -> engine.create(SandboxSpec.defaults().withCredentials(List.of(c))), "credentials but no network policy");
        }
        assertThat(events).isEmpty();
    }

    @Test
    void anUnknownDriverNameIsRefusedNamingIt() {
        invalid(() -> DriverProvider.open(DriverSettings.of("qemu")), "no isolation driver named 'qemu'");
    }

    /** Records attach, update and close. */
    record RecordingBroker(List<String> events) implements SandboxBroker {
        @Override
        public Attachment attach(SandboxId id, SandboxSpec spec, Path runDir, int sandboxHostUid) {
            events.add("attach");
            return new Attachment() {
                @Override
                public boolean bridged() {
                    return true;
                }

                @Override
                public Map<String, String> environment() {
                    return Map.of();
                }

                @Override
                public void updateNetworkPolicy(NetworkPolicy policy) {
                    events.add("update");
                }

                @Override
                public void close() {
                    events.add("close");
                }
            };
        }
    }

    /** Starts nothing; attaches (or, breaking its contract, does not) and may fail after attaching. */
    record FakeDriver(List<String> events, boolean attaches, boolean failsAfterAttach) implements IsolationDriver {
        @Override
        public String name() {
            return "fake";
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
            if (attaches) {
                broker.attach(id, spec, Path.of("/nonexistent/run"), 1_000_000);
            }
            if (failsAfterAttach) {
                throw AirlockException.unavailable("cannot start sandbox " + id + ": the runtime failed");
            }
            return new DriverSandbox() {
                @Override
                public SandboxId id() {
                    return id;
                }

                @Override
                public SandboxAgent agent() {
                    throw new UnsupportedOperationException("a fake sandbox has no agent");
                }

                @Override
                public long oomKills() {
                    return 0;
                }

                @Override
                public void destroy() {
                    events.add("destroy");
                }
            };
        }

        @Override
        public List<String> reapOrphans() {
            return List.of();
        }

        @Override
        public boolean isAlive(String instance) {
            return true;
        }

        @Override
        public void close() {
        }
    }
}
