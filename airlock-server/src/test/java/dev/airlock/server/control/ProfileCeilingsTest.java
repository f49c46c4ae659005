package dev.airlock.server.control;

import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Language;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.ExecSource;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.live.ServerFixtures;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Policy;
import dev.airlock.server.policy.Profile;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import static dev.airlock.server.control.Fixtures.admission;
import static dev.airlock.server.control.Fixtures.onSandbox;
import static dev.airlock.server.control.Fixtures.refusal;
import static dev.airlock.server.control.Fixtures.updateNetwork;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

/**
 * What a profile allows, each refusal naming the profile's rule (or the client's {@code profiles}
 * rule for a profile it may not use), always PERMISSION_DENIED: asking for less is the fix.
 */
class ProfileCeilingsTest {

    private static final Policy POLICY = Fixtures.policy("""
            profiles:
              small:
                languages: [python]
                limits: {memory: 256m, timeoutSeconds: 10}
                maxLimits: {memory: 1g, timeoutSeconds: 60}
                network:
                  allow: [{host: api.example.com, ports: [443]}]
                maxLifetimeSeconds: 600
              wide:
                network:
                  allow: [{host: api.example.com, ports: [443]}]
                approvals: [network]
              offline:
                maxLifetimeSeconds: 600
              data:
                images: [python-data, system]
            clients:
              alice:
                tokenSha256: %s
                profiles: [small, wide, offline, data]
                allow: ["*"]
            """);
    private static final Client ALICE = POLICY.client("alice");
    private static final Profile SMALL = POLICY.profile("small");
    private static final NetworkPolicy API = net(Destination.of("api.example.com", 443));
    private static final NetworkPolicy ELSEWHERE = net(Destination.of("elsewhere.example.org", 443));
    private static final String SANDBOX_ID = "al-test-0123456789abcdef";

    private final ProfileCeilings ceilings = new ProfileCeilings();

    private static NetworkPolicy net(Destination... allow) {
        return NetworkPolicy.of(List.of(allow), List.of(), List.of(), Map.of());
    }

    private static Command.Create create(String profile, String image, java.util.function.UnaryOperator<dev.airlock.core.Limits> limits,
                                         NetworkPolicy network, Duration ttl, Language language) {
        return new Command.Create(profile, image, limits, null, network, null, ttl, null, language);
    }

    /** Resolves {@code c} for alice as the service does: the profile only when she may use it. */
    private static Admission admit(Command.Create c) {
        String chosen = c.profile() == null ? ALICE.profiles().getFirst() : c.profile();
        Profile p = ALICE.profiles().contains(chosen) ? POLICY.profile(chosen) : null;
        return Fixtures.create(caller(c), p, c);
    }

    private static Caller caller(Command<?> c) {
        return Fixtures.caller(ALICE, c);
    }

    private static ManagedSandbox sandbox(Profile p, Instant createdAt) {
        return ServerFixtures.sandbox("alice", p, createdAt, Duration.ofMinutes(5), Language.PYTHON);
    }

    private static void refusedBy(Refusal r, String rule) {
        assertThat(r.control()).isEqualTo("profile");
        assertThat(r.rule()).isEqualTo(rule);
        assertThat(r.kind()).isEqualTo(Kind.PERMISSION_DENIED);
        assertThat(r.message()).contains("(rule " + rule + ")");
    }

    @Test
    void itIsNamedProfile() {
        assertThat(ceilings.name()).isEqualTo("profile");
    }

    // --- create ---

    @Test
    void aCreateWithinTheProfileGoesThrough() {
        assertThatCode(() -> ceilings.check(admit(Fixtures.plainCreate()))).doesNotThrowAnyException();
        Command.Create withinAll = create("small", "system", l -> l.withMemoryBytes(1L << 30).withTimeout(Duration.ofSeconds(60)), API,
                Duration.ofSeconds(600), Language.PYTHON);
        assertThatCode(() -> ceilings.check(admit(withinAll))).doesNotThrowAnyException();
    }

    @Test
    void aProfileTheClientMayNotUseIsRefusedByTheClientsRule() {
        Refusal r = refusal(() -> ceilings.check(admit(create("gpu", null, null, null, null, null))));
        refusedBy(r, "clients.alice.profiles");
        assertThat(r.message()).contains("may not use profile 'gpu'", "it may use small, wide, offline");
    }

    @Test
    void anotherImageThanTheProfilesIsRefused() {
        refusedBy(refusal(() -> ceilings.check(admit(create("small", "python:3.12", null, null, null, null)))), "profiles.small.images");
        Refusal r = refusal(() -> ceilings.check(admit(create("data", "other", null, null, null, null))));
        refusedBy(r, "profiles.data.images");
        assertThat(r.message()).contains("'other' is not among profile 'data''s images [python-data, system]");
    }

    @Test
    void aRequestMayPickAnyImageItsProfileLists() {
        assertThat(POLICY.profile("data").image()).as("the first listed is the default").isEqualTo("python-data");
        assertThat(POLICY.profile("small").images()).containsExactly("system");
        assertThatCode(() -> ceilings.check(admit(create("data", "system", null, null, null, null)))).doesNotThrowAnyException();
        assertThatCode(() -> ceilings.check(admit(create("data", "python-data", null, null, null, null)))).doesNotThrowAnyException();
    }

    @Test
    void limitsAboveMaxLimitsAreRefused() {
        Refusal r = refusal(() -> ceilings.check(admit(create("small", null, l -> l.withMemoryBytes(2L << 30), null, null, null))));
        refusedBy(r, "profiles.small.maxLimits");
        assertThat(r.message()).contains("memory 2g > 1g");
    }

    @Test
    void aLifetimeAboveTheProfilesIsRefused() {
        Refusal r = refusal(() -> ceilings.check(admit(create("small", null, null, null, Duration.ofSeconds(601), null))));
        refusedBy(r, "profiles.small.maxLifetimeSeconds");
        assertThat(r.message()).contains("601 s", "600 s");
    }

    @Test
    void aDefaultLanguageTheProfileDoesNotAllowIsRefused() {
        Refusal r = refusal(() -> ceilings.check(admit(create("small", null, null, null, null, Language.BASH))));
        refusedBy(r, "profiles.small.languages");
        assertThat(r.message()).contains("language bash");
    }

    @Test
    void networkBeyondTheProfilesIsRefused() {
        Refusal r = refusal(() -> ceilings.check(admit(create("small", null, null, ELSEWHERE, null, null))));
        refusedBy(r, "profiles.small.network");
        assertThat(r.message()).contains("destination elsewhere.example.org:443");
    }

    @Test
    void networkInAProfileWithoutNetworkIsRefused() {
        Refusal r = refusal(() -> ceilings.check(admit(create("offline", null, null, API, null, null))));
        refusedBy(r, "profiles.offline.network");
        assertThat(r.message()).contains("profile 'offline' has no network");
    }

    @Test
    void networkBeyondAProfileThatSendsItToAPersonIsLeftToTheApprovalGate() {
        assertThatCode(() -> ceilings.check(admit(create("wide", null, null, ELSEWHERE, null, null)))).doesNotThrowAnyException();
    }

    // --- executions ---

    @Test
    void anExecutionWithinTheProfileGoesThrough() {
        ManagedSandbox s = sandbox(SMALL, Instant.now());
        Command.Exec argv = new Command.Exec(SANDBOX_ID, new ExecSource.Command(List.of("ls")),
                new Command.ExecOptions(null, null, null, Duration.ofSeconds(60)), null);
        assertThatCode(() -> ceilings.check(onSandbox(caller(argv), argv, s, null))).doesNotThrowAnyException();
        Command.Exec code = new Command.Exec(SANDBOX_ID, new ExecSource.Code(null, "print(1)"), null, null);
        assertThatCode(() -> ceilings.check(onSandbox(caller(code), code, s, Language.PYTHON))).doesNotThrowAnyException();
    }

    @Test
    void anExecutionTimeoutAboveTheProfilesIsRefused() {
        ManagedSandbox s = sandbox(SMALL, Instant.now());
        Command.ExecOptions slow = new Command.ExecOptions(null, null, null, Duration.ofSeconds(61));
        Command.Exec exec = new Command.Exec(SANDBOX_ID, new ExecSource.Command(List.of("sleep", "61")), slow, null);
        refusedBy(refusal(() -> ceilings.check(onSandbox(caller(exec), exec, s, null))), "profiles.small.maxLimits.timeoutSeconds");
    }

    /** A background process (a server, a terminal) may live as long as its sandbox: the profile's lifetime is its ceiling. */
    @Test
    void aBackgroundProcessIsBoundedByTheSandboxsLifetimeNotTheExecutionTimeout() {
        ManagedSandbox s = sandbox(SMALL, Instant.now());
        Command.StartProcess beyondAnExecution = new Command.StartProcess(SANDBOX_ID, new ExecSource.Command(List.of("sleep", "61")),
                new Command.ExecOptions(null, null, null, Duration.ofSeconds(61)));
        assertThatCode(() -> ceilings.check(onSandbox(caller(beyondAnExecution), beyondAnExecution, s, null))).doesNotThrowAnyException();
        Command.StartProcess beyondTheSandbox = new Command.StartProcess(SANDBOX_ID, new ExecSource.Command(List.of("sleep", "1")),
                new Command.ExecOptions(null, null, null, SMALL.maxLifetime().plusSeconds(1)));
        refusedBy(refusal(() -> ceilings.check(onSandbox(caller(beyondTheSandbox), beyondTheSandbox, s, null))),
                "profiles.small.maxLifetimeSeconds");
    }

    @Test
    void codeInALanguageTheProfileDoesNotAllowIsRefused() {
        ManagedSandbox s = sandbox(SMALL, Instant.now());
        Command.Exec exec = new Command.Exec(SANDBOX_ID, new ExecSource.Code(Language.BASH, "echo hi"), null, null);
        refusedBy(refusal(() -> ceilings.check(onSandbox(caller(exec), exec, s, Language.BASH))), "profiles.small.languages");
        Command.StartProcess process = new Command.StartProcess(SANDBOX_ID, new ExecSource.Code(Language.BASH, "echo hi"), null);
        refusedBy(refusal(() -> ceilings.check(onSandbox(caller(process), process, s, Language.BASH))), "profiles.small.languages");
    }

    // --- lifetime and network of a live sandbox ---

    @Test
    void anExtensionWithinTheMaximumLifetimeGoesThrough() {
        ManagedSandbox s = sandbox(SMALL, Instant.now().minusSeconds(500));
        Command.ExtendTtl extend = new Command.ExtendTtl(s.id(), Duration.ofSeconds(60));
        assertThatCode(() -> ceilings.check(onSandbox(caller(extend), extend, s, null))).doesNotThrowAnyException();
    }

    @Test
    void anExtensionBeyondTheMaximumLifetimeCountsTheTimeAlreadyLived() {
        // 500 s lived + 120 s more = 620 s, above 600 s although 120 s alone is not
        ManagedSandbox s = sandbox(SMALL, Instant.now().minusSeconds(500));
        Command.ExtendTtl extend = new Command.ExtendTtl(s.id(), Duration.ofSeconds(120));
        Refusal r = refusal(() -> ceilings.check(onSandbox(caller(extend), extend, s, null)));
        refusedBy(r, "profiles.small.maxLifetimeSeconds");
        assertThat(r.message()).contains("sandbox " + s.id() + " would live");
    }

    @Test
    void aNetworkChangeWithinTheProfileGoesThrough() {
        ManagedSandbox s = sandbox(SMALL, Instant.now());
        Command.UpdateNetwork narrower = new Command.UpdateNetwork(s.id(), API);
        assertThatCode(() -> ceilings.check(updateNetwork(caller(narrower), narrower, s))).doesNotThrowAnyException();
        Command.UpdateNetwork none = new Command.UpdateNetwork(s.id(), NetworkPolicy.NONE);
        assertThatCode(() -> ceilings.check(updateNetwork(caller(none), none, s))).doesNotThrowAnyException();
    }

    @Test
    void aNetworkChangeBeyondTheProfileIsRefusedUnlessAPersonDecidesIt() {
        Command.UpdateNetwork wider = new Command.UpdateNetwork(SANDBOX_ID, ELSEWHERE);
        ManagedSandbox small = sandbox(SMALL, Instant.now());
        refusedBy(refusal(() -> ceilings.check(updateNetwork(caller(wider), wider, small))), "profiles.small.network");
        ManagedSandbox wide = sandbox(POLICY.profile("wide"), Instant.now());
        assertThatCode(() -> ceilings.check(updateNetwork(caller(wider), wider, wide))).doesNotThrowAnyException();
    }

    @Test
    void commandsWithoutCeilingsGoThrough() {
        for (Command<?> c : List.<Command<?>>of(new Command.Destroy(SANDBOX_ID), new Command.Stat(SANDBOX_ID, "a"),
                new Command.Signal(SANDBOX_ID, "p", 9), new Command.Metrics())) {
            assertThatCode(() -> ceilings.check(admission(caller(c), c))).as(c.toString()).doesNotThrowAnyException();
        }
    }
}
