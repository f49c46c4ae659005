package dev.airlock.it;

import dev.airlock.client.SandboxSpec;
import dev.airlock.core.DriverSettings;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A profile names the isolation tier its sandboxes need; the server runs an engine of every tier
 * its profiles name and refuses to start, with one sentence, when the host cannot give one; a
 * sandbox's REST and MCP representation, and the MCP tool descriptions, say the tier it got. The gVisor case runs real runsc sandboxes and checks
 * from inside that the code's kernel is gVisor's, not the host's; the microVM case boots a real guest.
 */
class IsolationTierTest {

    private static final String GVISOR_POLICY = """
            profiles:
              default: {isolation: gvisor}
            clients:
              local: {tokenFile: token, profiles: [default], allow: ["*"]}
            """;

    /** What gVisor's Sentry answers for /proc/version, whatever the host runs. */
    private static final String GVISOR_KERNEL = "Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016";

    private static final DriverSettings RUNSC = new DriverSettings("oci", Map.of("runtime", "runsc"), Set.of());

    @Test
    void aContainerServerSaysItsTierInRestAndMcp() {
        try (LiveServer live = LiveServer.start(c -> c.withPoolSize(0))) {
            String id = live.client.create(SandboxSpec.builder().build()).id();
            RawHttp http = new RawHttp(live.uri());
            RawHttp.Answer a = http.send("GET", "/v1/sandboxes/" + id, null, Map.of("Authorization", "Bearer " + live.token()));
            assertThat(RawMcp.JSON.readTree(a.body()).path("isolation").asString()).isEqualTo("container");
            live.client.delete(id);

            RawMcp mcp = new RawMcp(live.uri(), live.token());
            String session = mcp.open();
            JsonNode created = mcp.call(session, 2, "sandbox_create", "{}").path("result").path("structuredContent");
            assertThat(created.path("isolation").asString()).isEqualTo("container");
            mcp.call(session, 3, "sandbox_destroy", "{\"sandboxId\": \"" + created.path("sandboxId").asString() + "\"}");
            JsonNode tools = RawMcp.reply(mcp.post(session, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}").body(), 4);
            assertThat(tools.path("result").path("tools").findValuesAsString("description"))
                    .anySatisfy(d -> assertThat(d).contains("The sandbox is a hardened container"));
        }
    }

    /**
     * One server, two tiers: a runc server whose policy has a profile that requires gVisor starts a
     * runsc engine beside its own, and each profile's sandboxes get their tier (checked from
     * inside: the kernel that answers is gVisor's or the host's).
     */
    @Test
    void aRuncServerAlsoRunsTheGvisorTierAProfileRequires() throws Exception {
        String policy = """
                profiles:
                  default: {}
                  strong: {isolation: gvisor}
                clients:
                  local: {tokenFile: token, profiles: [default, strong], allow: ["*"]}
                """;
        try (LiveServer live = LiveServer.withPolicy(policy, c -> c.withPoolSize(0))) {
            var plain = live.client.create(SandboxSpec.builder().build());
            var strong = live.client.create(SandboxSpec.builder().profile("strong").build());
            try {
                assertThat(plain.exec("cat", "/proc/version").stdout()).doesNotContain(GVISOR_KERNEL)
                        .isEqualTo(java.nio.file.Files.readString(java.nio.file.Path.of("/proc/version")));
                assertThat(strong.exec("cat", "/proc/version").stdout()).contains(GVISOR_KERNEL);
                RawHttp http = new RawHttp(live.uri());
                Map<String, String> auth = Map.of("Authorization", "Bearer " + live.token());
                assertThat(RawMcp.JSON.readTree(http.send("GET", "/v1/sandboxes/" + plain.id(), null, auth).body()).path("isolation")
                        .asString()).isEqualTo("container");
                assertThat(RawMcp.JSON.readTree(http.send("GET", "/v1/sandboxes/" + strong.id(), null, auth).body()).path("isolation")
                        .asString()).isEqualTo("gvisor");
            } finally {
                live.client.delete(plain.id());
                live.client.delete(strong.id());
            }
        }
    }

    /**
     * The microVM tier, now that its driver is on the server's class path: a runc server whose
     * policy has a profile that requires it boots a QEMU guest for that profile's sandbox (one boot,
     * seconds under software emulation), whose kernel is the guest's, not the host's.
     */
    @Test
    void aRuncServerAlsoRunsTheMicrovmTierAProfileRequires() throws Exception {
        try (LiveServer live = LiveServer.withPolicy("""
                profiles:
                  default: {isolation: microvm}
                clients:
                  local: {tokenFile: token, profiles: [default], allow: ["*"]}
                """, c -> c.withPoolSize(0))) {
            var guest = live.client.create(SandboxSpec.builder().build());
            try {
                assertThat(guest.exec("uname", "-r").stdout().strip()).isNotEmpty().isNotEqualTo(System.getProperty("os.version"));
                RawHttp http = new RawHttp(live.uri());
                Map<String, String> auth = Map.of("Authorization", "Bearer " + live.token());
                assertThat(RawMcp.JSON.readTree(http.send("GET", "/v1/sandboxes/" + guest.id(), null, auth).body()).path("isolation")
                        .asString()).isEqualTo("microvm");
            } finally {
                live.client.delete(guest.id());
            }
        }
    }

    @Test
    void aGvisorServerGivesGvisorSandboxes() {
        try (LiveServer live = LiveServer.withPolicy(GVISOR_POLICY, c -> c.withPoolSize(0).withDriver(RUNSC))) {
            var sandbox = live.client.create(SandboxSpec.builder().build());
            try {
                assertThat(sandbox.exec("cat", "/proc/version").stdout()).contains(GVISOR_KERNEL);
                RawHttp.Answer a = new RawHttp(live.uri()).send("GET", "/v1/sandboxes/" + sandbox.id(), null,
                        Map.of("Authorization", "Bearer " + live.token()));
                assertThat(RawMcp.JSON.readTree(a.body()).path("isolation").asString()).isEqualTo("gvisor");
            } finally {
                live.client.delete(sandbox.id());
            }
        }
    }
}
