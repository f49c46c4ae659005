package dev.airlock.server.policy;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.HexFormat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PolicyFileTest {

    private static final String HASH = HexFormat.of().formatHex(Policy.sha256("alk_test-token-0123456789abcdef0123456789"));

    private static Policy parse(String yaml) {
        return PolicyFile.parse("policy.yaml", yaml, null);
    }

    private static void refused(String yaml, String... parts) {
        assertThatThrownBy(() -> parse(yaml)).isInstanceOf(AirlockException.class)
                .satisfies(e -> assertThat(((AirlockException) e).kind()).isEqualTo(AirlockException.Kind.INVALID_ARGUMENT))
                .satisfies(e -> assertThat(e.getMessage()).contains(parts));
    }

    @Test
    void aFullPolicyLoads() {
        Policy p = parse("""
                version: 1
                approvals: {timeoutSeconds: 60, elicitation: false}
                secrets:
                  github: {env: GITHUB_TOKEN, prefix: "Bearer ", destinations: ["api.github.com:443"]}
                profiles:
                  small:
                    languages: [python, bash]
                    limits: {memory: 256m, timeoutSeconds: 10}
                    maxLimits: {memory: 1g, timeoutSeconds: 60}
                    network:
                      allow: [{host: api.github.com, ports: [443]}]
                    credentials: [github]
                    inputs: {datasets: /srv/datasets}
                    maxLifetimeSeconds: 600
                    approvals: [network]
                    approveRequests:
                      - {host: api.github.com, ports: [443], methods: [post, DELETE]}
                    outputs: 4m
                clients:
                  agent:
                    tokenSha256: %s
                    profiles: [small]
                    allow: [run, sandbox.create, exec]
                    quotas: {sandboxes: 3, executionsPerMinute: 30}
                """.formatted(HASH));
        Profile small = p.profile("small");
        assertThat(small.languages()).containsExactlyInAnyOrder(Language.PYTHON, Language.BASH);
        assertThat(small.limits().memoryBytes()).isEqualTo(256L << 20);
        assertThat(small.maxLimits().memoryBytes()).isEqualTo(1L << 30);
        assertThat(small.maxLimits().timeout()).isEqualTo(Duration.ofSeconds(60));
        // a field maxLimits leaves out is capped at the profile's own limit
        assertThat(small.maxLimits().pids()).isEqualTo(Limits.DEFAULTS.pids());
        assertThat(small.network().allow()).hasSize(1);
        assertThat(small.inputs()).singleElement().satisfies(i -> assertThat(i.sandboxPath()).isEqualTo("/inputs/datasets"));
        assertThat(small.credentials()).containsExactly("github");
        assertThat(small.maxLifetime()).isEqualTo(Duration.ofSeconds(600));
        assertThat(small.approvals()).containsExactly(Approval.Trigger.NETWORK);
        assertThat(small.outputBytes()).isEqualTo(4L << 20);
        assertThat(small.requestApprovals()).singleElement().satisfies(r -> {
            assertThat(r.covers("POST", "api.github.com", 443)).isTrue();
            assertThat(r.covers("delete", "API.GITHUB.COM", 443)).isTrue();
            assertThat(r.covers("GET", "api.github.com", 443)).isFalse();
            assertThat(r.covers("POST", "api.github.com", 80)).isFalse();
            assertThat(r.inspects("api.github.com", 443)).isTrue();
        });
        Client agent = p.client("agent");
        assertThat(agent.operations()).containsExactlyInAnyOrder(Operation.RUN, Operation.SANDBOX_CREATE, Operation.EXEC);
        assertThat(agent.maxSandboxes()).isEqualTo(3);
        assertThat(agent.executionsPerMinute()).isEqualTo(30);
        assertThat(p.approvalTimeout()).isEqualTo(Duration.ofSeconds(60));
        assertThat(p.elicitation()).isFalse();
        assertThat(p.secrets().get("github").toString()).doesNotContain("Bearer ghp");
    }

    @Test
    void theBuiltInPolicyIsOneLocalClientAndALockedDownProfile() {
        Policy p = Policy.builtIn("alk_0123456789abcdef0123456789abcdef");
        assertThat(p.clients()).containsOnlyKeys("local");
        assertThat(p.client("local").operations()).containsExactlyInAnyOrder(Operation.values());
        Profile d = p.profile("default");
        assertThat(d.network().isNone()).isTrue();
        assertThat(d.inputs()).isEmpty();
        assertThat(d.credentials()).isEmpty();
        assertThat(p.authenticate("Bearer alk_0123456789abcdef0123456789abcdef")).isPresent();
        assertThat(p.authenticate("Bearer alk_0123456789abcdef0123456789abcdeX")).isEmpty();
        assertThat(p.authenticate("alk_0123456789abcdef0123456789abcdef")).isEmpty();
        assertThat(p.authenticate(null)).isEmpty();
    }

    @Test
    void errorsNameTheLineAndTheField() {
        refused("""
                profiles:
                  default:
                    limits: {memroy: 1g}
                clients: {}
                """, "policy.yaml line 3", "profiles.default.limits.memroy", "unknown field 'memroy'", "memory");
        refused("""
                profiles:
                  default:
                    limits:
                      memory: lots
                clients: {}
                """, "line 4", "profiles.default.limits.memory");
        refused("""
                profiles:
                  default: {}
                clients:
                  a: {tokenSha256: %s, profiles: [big], allow: ["*"]}
                """.formatted(HASH), "line 4", "clients.a.profiles[0]", "no profile 'big'", "default");
        refused("""
                profiles:
                  default: {}
                clients:
                  a: {tokenSha256: %s, profiles: [default], allow: [sandbox.nuke]}
                """.formatted(HASH), "clients.a.allow[0]", "unknown operation 'sandbox.nuke'");
        refused("""
                profiles:
                  default: {}
                clients:
                  a: {tokenSha256: abc, profiles: [default], allow: ["*"]}
                """, "clients.a.tokenSha256", "airlock policy token");
        refused("""
                profiles:
                  default:
                    limits: {memory: 1g}
                    maxLimits: {memory: 512m}
                clients: {}
                """, "profiles.default.maxLimits", "below limits", "memory");
        refused("""
                profiles:
                  default:
                    network:
                      allow: [{host: bad_name}]
                clients: {}
                """, "line 4", "profiles.default.network", "network.allow.host");
        refused("""
                profiles:
                  default: {credentials: [github]}
                clients: {}
                """, "profiles.default.credentials[0]", "no secret 'github'");
        refused("""
                secrets:
                  github: {value: ghp_123, destinations: [api.github.com]}
                profiles: {default: {}}
                clients: {}
                """, "secrets.github.value", "unknown field 'value'");
        refused("""
                secrets:
                  github: {destinations: [api.github.com]}
                profiles: {default: {}}
                clients: {}
                """, "secrets.github", "exactly one of 'env'", "never goes in the policy");
        refused("""
                profiles:
                  default: {}
                  default: {}
                clients: {}
                """, "line 3", "profiles.default", "appears twice");
        refused("profiles: [", "not valid YAML");
        refused("""
                profiles:
                  default:
                    network: {allow: [{host: pay.example}]}
                    approveRequests: [{host: pay.example}]
                clients: {}
                """, "line 4", "profiles.default.approveRequests[0]", "needs 'host' and 'methods'");
        refused("""
                profiles:
                  default:
                    approveRequests: [{host: pay.example, methods: [POST]}]
                clients: {}
                """, "profiles.default.approveRequests", "without network");
        refused("", "is empty");
        refused("""
                profiles: {default: {}}
                clients:
                  a: {tokenSha256: %s, profiles: [default], allow: ["*"]}
                  b: {tokenSha256: %s, profiles: [default], allow: ["*"]}
                """.formatted(HASH, HASH), "clients.b", "same token as client 'a'");
    }

    @Test
    void aTokenFileMustBeTheOwnersOnly(@TempDir Path dir) throws Exception {
        Path token = dir.resolve("agent.token");
        Files.writeString(token, "alk_test-token-0123456789abcdef0123456789\n");
        Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-r--r--"));
        String yaml = """
                profiles: {default: {}}
                clients:
                  agent: {tokenFile: agent.token, profiles: [default], allow: [run]}
                """;
        assertThatThrownBy(() -> PolicyFile.parse("policy.yaml", yaml, dir)).hasMessageContaining("readable by others")
                .hasMessageContaining("clients.agent.tokenFile");
        Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-------"));
        Policy p = PolicyFile.parse("policy.yaml", yaml, dir);
        assertThat(p.authenticate("Bearer alk_test-token-0123456789abcdef0123456789")).map(Client::name).contains("agent");
    }

    @Test
    void aRequestedNetworkMayOnlyNarrowTheProfiles() {
        Profile p = parse("""
                profiles:
                  web:
                    network:
                      allow: [{host: "*.example.com", ports: [443]}, {host: pypi.org}]
                      ranges: [10.1.0.0/16]
                      hosts: {db.example.com: [10.1.2.3]}
                clients: {}
                """.replace("clients: {}", "clients:\n  a: {tokenSha256: " + HASH + ", profiles: [web], allow: [\"*\"]}"))
                .profile("web");
        assertThat(p.beyondNetwork(dev.airlock.core.NetworkPolicy.of(java.util.List.of(
                dev.airlock.core.NetworkPolicy.Destination.of("api.example.com", 443),
                dev.airlock.core.NetworkPolicy.Destination.of("pypi.org", 443)),
                java.util.List.of(), java.util.List.of(new dev.airlock.core.NetworkPolicy.AddressRange("10.1.2.0/24")),
                java.util.Map.of("db.example.com", java.util.List.of("10.1.2.3"))))).isEmpty();
        assertThat(p.beyondNetwork(dev.airlock.core.NetworkPolicy.of(java.util.List.of(
                dev.airlock.core.NetworkPolicy.Destination.of("example.com", 443),
                dev.airlock.core.NetworkPolicy.Destination.of("api.example.com", 80),
                dev.airlock.core.NetworkPolicy.Destination.of("api.example.com")),
                java.util.List.of(), java.util.List.of(new dev.airlock.core.NetworkPolicy.AddressRange("10.0.0.0/8")),
                java.util.Map.of("pypi.org", java.util.List.of("10.1.2.3")))))
                .containsExactly("destination example.com:443", "destination api.example.com:80", "destination api.example.com:*",
                        "range 10.0.0.0/8", "hosts entry pypi.org -> [10.1.2.3]");
    }

    @Test
    void aProfileMayNameItsIsolationTier() {
        String yaml = """
                profiles:
                  strong: {isolation: gvisor}
                  plain: {}
                clients:
                  a: {tokenSha256: %s, profiles: [strong, plain], allow: [run]}
                """.formatted(HASH);
        Policy p = parse(yaml);
        assertThat(p.profile("strong").isolation()).isEqualTo(dev.airlock.core.Isolation.GVISOR);
        assertThat(p.profile("plain").isolation()).as("none named: the server's tier").isNull();
        refused(yaml.replace("gvisor", "vm"), "unknown isolation 'vm': choose container, gvisor, microvm");
    }

    @Test
    void aGvisorProfileMayPauseItsIdleSandboxesToDiskInsteadOfDestroyingThem() {
        String yaml = """
                profiles:
                  parked: {isolation: gvisor, onIdle: pauseToDisk}
                  plain: {onIdle: destroy}
                clients:
                  a: {tokenSha256: %s, profiles: [parked, plain], allow: [run]}
                """.formatted(HASH);
        Policy p = parse(yaml);
        assertThat(p.profile("parked").idleToDisk()).isTrue();
        assertThat(p.profile("plain").idleToDisk()).isFalse();
        refused(yaml.replace("isolation: gvisor, ", ""), "onIdle: pauseToDisk needs isolation: gvisor");
        refused(yaml.replace("onIdle: destroy", "onIdle: sleep"), "onIdle is 'destroy' (the default) or 'pauseToDisk', not 'sleep'");
    }

    @Test
    void aProfileMayNamePreviewPortsEachOnceAndAtMostSixteen() {
        String yaml = """
                profiles:
                  web: {ports: [8000, 3000]}
                  plain: {}
                clients:
                  a: {tokenSha256: %s, profiles: [web, plain], allow: [run]}
                """.formatted(HASH);
        Policy p = parse(yaml);
        assertThat(p.profile("web").ports()).containsExactly(8000, 3000);
        assertThat(p.profile("plain").ports()).as("off unless named").isEmpty();
        refused(yaml.replace("[8000, 3000]", "[8000, 8000]"), "line 2", "profiles.web.ports[1]", "port 8000 is listed twice");
        refused(yaml.replace("[8000, 3000]", "[0]"), "profiles.web.ports[0]", "out of range: give 1 to 65535");
        refused(yaml.replace("[8000, 3000]", "[70000]"), "profiles.web.ports[0]", "out of range");
        refused(yaml.replace("[8000, 3000]", "[http]"), "profiles.web.ports[0]", "'http' is not a whole number");
        refused(yaml.replace("[8000, 3000]", "8000"), "profiles.web.ports", "expected a list");
        StringBuilder many = new StringBuilder("[");
        for (int i = 1; i <= 17; i++) {
            many.append(i == 1 ? "" : ", ").append(8000 + i);
        }
        refused(yaml.replace("[8000, 3000]", many + "]"), "profiles.web.ports", "at most 16 preview ports, not 17");
    }

    @Test
    void starLeavesOutTheOperatorsReachWhichMustBeNamed() {
        String other = HexFormat.of().formatHex(Policy.sha256("alk_other-token-0123456789abcdef0123456789"));
        Policy p = parse("""
                profiles: {default: {}}
                clients:
                  agent: {tokenSha256: %s, profiles: [default], allow: ["*"]}
                  operator: {tokenSha256: %s, profiles: [default], allow: [sandbox.read, sandbox.destroy, sandbox.any]}
                """.formatted(HASH, other));
        assertThat(p.client("agent").operations()).doesNotContain(Operation.SANDBOX_ANY).hasSize(Operation.values().length - 1);
        assertThat(p.client("operator").operations()).containsExactlyInAnyOrder(Operation.SANDBOX_READ, Operation.SANDBOX_DESTROY,
                Operation.SANDBOX_ANY);
        refused("""
                profiles: {default: {}}
                clients:
                  a: {tokenSha256: %s, profiles: [default], allow: [sandbox.all]}
                """.formatted(HASH), "unknown operation 'sandbox.all'", "sandbox.any", "for all but sandbox.any");
    }

    @Test
    void e2bTemplatesMapToProfilesThePolicyHas() {
        String clients = """
                clients:
                  agent: {tokenSha256: %s, profiles: [small, data], allow: ["*"]}
                """.formatted(HASH);
        Policy p = parse("""
                profiles: {small: {}, data: {}}
                e2b:
                  templates: {base: small, code-interpreter-v1: data, "team/analysis:v2": data}
                """ + clients);
        assertThat(p.e2bTemplates()).containsExactlyInAnyOrderEntriesOf(java.util.Map.of("base", "small", "code-interpreter-v1", "data",
                "team/analysis:v2", "data"));
        assertThat(parse("profiles: {small: {}, data: {}}\n" + clients).e2bTemplates()).isEmpty();
        refused("profiles: {small: {}, data: {}}\ne2b: {templates: {base: large}}\n" + clients,
                "E2B template 'base' names profile 'large'", "small, data");
        refused("profiles: {small: {}, data: {}}\ne2b: {images: {}}\n" + clients, "images");
    }
}
