package dev.airlock.server.live;

import dev.airlock.core.AirlockException;
import dev.airlock.core.DriverProvider;
import dev.airlock.core.DriverSettings;
import dev.airlock.core.Isolation;
import dev.airlock.core.IsolationDriver;
import dev.airlock.core.SandboxBroker;
import dev.airlock.server.policy.Policy;
import dev.airlock.server.policy.PolicyFile;
import org.junit.jupiter.api.Test;

import java.util.HexFormat;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A profile that requires a tier this host cannot give stops the server's start with one sentence
 * naming the profile and what to do. With real drivers every tier may work on a host (this one
 * gives all three), so a stub provider on this module's test class path plays a microVM driver
 * that cannot start.
 */
class TiersTest {

    /** A container driver that starts nothing ({@link ServerFixtures.InertDriver}), and a microVM tier that never starts. */
    public static final class StubProvider implements DriverProvider {
        @Override
        public String name() {
            return "stub";
        }

        @Override
        public IsolationDriver create(DriverSettings settings) {
            if (settings.options().containsKey("microvm")) {
                throw AirlockException.unavailable("qemu-system-x86_64 is not installed (stub)");
            }
            return new ServerFixtures.InertDriver();
        }

        @Override
        public DriverSettings settingsFor(Isolation tier, DriverSettings base) {
            return tier == Isolation.MICROVM ? new DriverSettings("stub", Map.of("microvm", "yes"), base.protectedPaths()) : null;
        }
    }

    @Test
    void aProfileThatNeedsATierTheHostCannotGiveStopsTheStart() {
        String hash = HexFormat.of().formatHex(Policy.sha256("alk_test-token-0123456789abcdef0123456789"));
        Policy policy = PolicyFile.parse("policy.yaml", """
                profiles:
                  default: {isolation: microvm}
                clients:
                  local: {tokenSha256: %s, profiles: [default], allow: ["*"]}
                """.formatted(hash), null);
        assertThatThrownBy(() -> Tiers.open(policy, DriverSettings.of("stub"), SandboxBroker.NONE, 0).close())
                .isInstanceOf(AirlockException.class)
                .hasMessageContaining("profile 'default' requires isolation microvm (rule profiles.default.isolation), which this host cannot give")
                .hasMessageContaining("qemu-system-x86_64 is not installed (stub)")
                .hasMessageContaining("airlock doctor");
    }
}
