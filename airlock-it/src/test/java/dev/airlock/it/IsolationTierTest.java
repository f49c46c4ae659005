package dev.airlock.it;

import dev.airlock.client.SandboxSpec;
import dev.airlock.core.DriverSettings;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A profile names the isolation tier its sandboxes need; a server whose driver gives another tier
 * refuses to start with one sentence, and a sandbox's REST and MCP representation, and the MCP
 * tool descriptions, say the tier it got. The gVisor case runs real runsc sandboxes and checks
 * from inside that the code's kernel is gVisor's, not the host's.
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

    @Test
    void aProfileThatNeedsGvisorStopsARuncServerAtStart() {
        assertThatThrownBy(() -> LiveServer.withPolicy(GVISOR_POLICY, c -> c.withPoolSize(0)).close())
                .hasMessageContaining("profile 'default' requires isolation gvisor (rule profiles.default.isolation)")
                .hasMessageContaining("oci/runc gives container")
                .hasMessageContaining("--runtime runsc");
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
