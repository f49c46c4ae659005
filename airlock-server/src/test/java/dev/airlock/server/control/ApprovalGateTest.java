package dev.airlock.server.control;

import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Language;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.ExecSource;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.live.ServerFixtures;
import dev.airlock.server.policy.Approval;
import dev.airlock.server.policy.Approval.Trigger;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Profile;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static dev.airlock.server.control.Fixtures.admission;
import static dev.airlock.server.control.Fixtures.builtInProfile;
import static dev.airlock.server.control.Fixtures.client;
import static dev.airlock.server.control.Fixtures.onSandbox;
import static dev.airlock.server.control.Fixtures.plainCreate;
import static dev.airlock.server.control.Fixtures.refusal;
import static dev.airlock.server.control.Fixtures.updateNetwork;
import static dev.airlock.server.control.Fixtures.withApprovals;
import static dev.airlock.server.control.Fixtures.withNetwork;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.awaitility.Awaitility.await;

/**
 * The profile's {@code approvals}: what it marks waits for a person, deciding from another
 * thread as an operator would; approval lets the command through, a denial, no answer in time or
 * a cancelled wait refuse it under the profile's {@code approvals} rule.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ApprovalGateTest {

    private static final Client ALICE = client("alice");
    private static final NetworkPolicy API = net(Destination.of("api.example.com", 443));
    private static final NetworkPolicy ELSEWHERE = net(Destination.of("elsewhere.example.org", 443));

    @TempDir
    Path dir;
    private AuditLog audit;
    private Approvals approvals;
    private ApprovalGate gate;

    @BeforeEach
    void open() {
        audit = AuditLog.open(dir.resolve("airlock.db"));
        approvals = new Approvals(audit, Duration.ofSeconds(20));
        gate = new ApprovalGate(approvals);
    }

    @AfterEach
    void close() {
        audit.close();
    }

    private static NetworkPolicy net(Destination... allow) {
        return NetworkPolicy.of(List.of(allow), List.of(), List.of(), Map.of());
    }

    private static Admission create(Profile p, Command.Create c) {
        return Fixtures.create(Fixtures.caller(ALICE, c), p, c);
    }

    private static Command.Create createWithNetwork(NetworkPolicy network) {
        return new Command.Create(null, null, null, null, network, null, null, null, null);
    }

    private static ManagedSandbox sandbox(Profile p) {
        return ServerFixtures.sandbox("alice", p, Instant.now(), Duration.ofMinutes(5), Language.PYTHON);
    }

    /**
     * Answers the first approval asked for, from another thread, as an operator would; completes
     * with the approval as it was asked.
     */
    private CompletableFuture<Approval> answer(boolean approve, String reason) {
        return CompletableFuture.supplyAsync(() -> {
            AtomicReference<Approval> asked = new AtomicReference<>();
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
                    .until(() -> approvals.pending().stream().findFirst().map(a -> {
                        asked.set(a);
                        return true;
                    }).orElse(false));
            approvals.decide(asked.get().id(), approve, "rest:operator", reason);
            return asked.get();
        });
    }

    private static void refusedByApproval(Refusal r, String rule) {
        assertThat(r.control()).isEqualTo("approval");
        assertThat(r.rule()).isEqualTo(rule);
        assertThat(r.kind()).isEqualTo(Kind.PERMISSION_DENIED);
    }

    @Test
    void itIsNamedApproval() {
        assertThat(gate.name()).isEqualTo("approval");
    }

    @Test
    void aProfileWithoutApprovalsAsksNobody() {
        assertThatCode(() -> gate.check(create(builtInProfile(), plainCreate()))).doesNotThrowAnyException();
        assertThat(approvals.pending()).isEmpty();
    }

    @Test
    void commandsNoApprovalCoversGoThroughUnasked() {
        Profile all = withApprovals(builtInProfile(), Set.of(Trigger.CREATE, Trigger.EXEC, Trigger.NETWORK));
        ManagedSandbox s = sandbox(all);
        for (Command<?> c : List.<Command<?>>of(new Command.Destroy(s.id()), new Command.ExtendTtl(s.id(), Duration.ofSeconds(1)),
                new Command.Signal(s.id(), "p", 9), new Command.WriteFile(s.id(), "a", null))) {
            assertThatCode(() -> gate.check(onSandbox(Fixtures.caller(ALICE, c), c, s, null))).as(c.toString()).doesNotThrowAnyException();
        }
        assertThat(approvals.pending()).isEmpty();
    }

    @Test
    void anApprovedCreateGoesThrough() throws Exception {
        Profile gated = withApprovals(builtInProfile(), Set.of(Trigger.CREATE));
        CompletableFuture<Approval> operator = answer(true, null);
        gate.check(create(gated, plainCreate()));
        Approval asked = operator.get(10, TimeUnit.SECONDS);
        assertThat(asked.trigger()).isEqualTo(Trigger.CREATE);
        assertThat(asked.rule()).isEqualTo("profiles.default.approvals (create)");
        assertThat(asked.client()).isEqualTo("alice");
        assertThat(asked.sandbox()).isNull();
        assertThat(asked.summary()).contains("create a sandbox with profile 'default' for client 'alice'", "network: none");
        assertThat(approvals.get(asked.id()).state()).isEqualTo(Approval.State.APPROVED);
    }

    @Test
    void aDeniedCreateIsRefusedByTheProfilesApprovalsRule() throws Exception {
        Profile gated = withApprovals(builtInProfile(), Set.of(Trigger.CREATE));
        CompletableFuture<Approval> operator = answer(false, "not today");
        Refusal r = refusal(() -> gate.check(create(gated, plainCreate())));
        refusedByApproval(r, "profiles.default.approvals");
        assertThat(r.message()).contains("denied by rest:operator", "not today", operator.get(10, TimeUnit.SECONDS).id());
    }

    @Test
    void aCreateNobodyAnswersIsRefusedWhenTheWaitEnds() {
        approvals = new Approvals(audit, Duration.ofMillis(200));
        gate = new ApprovalGate(approvals);
        Profile gated = withApprovals(builtInProfile(), Set.of(Trigger.CREATE));
        Refusal r = refusal(() -> gate.check(create(gated, plainCreate())));
        refusedByApproval(r, "profiles.default.approvals");
        assertThat(r.message()).contains("nobody approved it");
        assertThat(approvals.pending()).isEmpty();
    }

    @Test
    void aCancelledWaitIsRefused() throws Exception {
        Profile gated = withApprovals(builtInProfile(), Set.of(Trigger.CREATE));
        AtomicReference<Refusal> refused = new AtomicReference<>();
        Thread waiting = Thread.ofVirtual().start(() -> refused.set(refusal(() -> gate.check(create(gated, plainCreate())))));
        await().atMost(Duration.ofSeconds(10)).until(() -> !approvals.pending().isEmpty());
        waiting.interrupt();
        waiting.join(10_000);
        refusedByApproval(refused.get(), "profiles.default.approvals");
        assertThat(refused.get().message()).contains("abandoned");
    }

    @Test
    void anExecutionInAGatedProfileWaitsAndShowsWhatWouldRun() throws Exception {
        Profile gated = withApprovals(builtInProfile(), Set.of(Trigger.EXEC));
        ManagedSandbox s = sandbox(gated);
        Command.Exec exec = new Command.Exec(s.id(), new ExecSource.Command(List.of("echo", "it's here")), null, null);
        CompletableFuture<Approval> operator = answer(true, null);
        gate.check(onSandbox(Fixtures.caller(ALICE, exec), exec, s, null));
        Approval asked = operator.get(10, TimeUnit.SECONDS);
        assertThat(asked.trigger()).isEqualTo(Trigger.EXEC);
        assertThat(asked.sandbox()).isEqualTo(s.id());
        assertThat(asked.rule()).isEqualTo("profiles.default.approvals (exec)");
        assertThat(asked.summary()).isEqualTo("run in sandbox " + s.id() + ": echo 'it'\\''s here'");
    }

    @Test
    void aDeniedBackgroundProcessIsRefused() throws Exception {
        Profile gated = withApprovals(builtInProfile(), Set.of(Trigger.EXEC));
        ManagedSandbox s = sandbox(gated);
        Command.StartProcess start = new Command.StartProcess(s.id(), new ExecSource.Code(null, "print(1)"), null);
        CompletableFuture<Approval> operator = answer(false, null);
        Refusal r = refusal(() -> gate.check(onSandbox(Fixtures.caller(ALICE, start), start, s, Language.PYTHON)));
        refusedByApproval(r, "profiles.default.approvals");
        assertThat(operator.get(10, TimeUnit.SECONDS).summary()).isEqualTo("run in sandbox " + s.id() + ": python code: print(1)");
    }

    @Test
    void networkBeyondTheProfileAtCreateWaitsForAPerson() throws Exception {
        Profile api = withApprovals(withNetwork(builtInProfile(), "api", API), Set.of(Trigger.NETWORK));
        // within the profile's network: nobody is asked
        assertThatCode(() -> gate.check(create(api, createWithNetwork(API)))).doesNotThrowAnyException();
        assertThat(approvals.pending()).isEmpty();

        CompletableFuture<Approval> operator = answer(true, null);
        gate.check(create(api, createWithNetwork(ELSEWHERE)));
        Approval asked = operator.get(10, TimeUnit.SECONDS);
        assertThat(asked.trigger()).isEqualTo(Trigger.NETWORK);
        assertThat(asked.rule()).isEqualTo("profiles.api.approvals (network)");
        assertThat(asked.summary()).contains("beyond profile 'api'", "destination elsewhere.example.org:443");
    }

    @Test
    void aDeniedNetworkChangeIsRefused() throws Exception {
        Profile api = withApprovals(withNetwork(builtInProfile(), "api", API), Set.of(Trigger.NETWORK));
        ManagedSandbox s = sandbox(api);
        Command.UpdateNetwork wider = new Command.UpdateNetwork(s.id(), ELSEWHERE);
        CompletableFuture<Approval> operator = answer(false, "no");
        Refusal r = refusal(() -> gate.check(updateNetwork(Fixtures.caller(ALICE, wider), wider, s)));
        refusedByApproval(r, "profiles.api.approvals");
        assertThat(operator.get(10, TimeUnit.SECONDS).sandbox()).isEqualTo(s.id());
    }

    @Test
    void aNetworkChangeWithinTheProfileAsksNobody() {
        Profile api = withApprovals(withNetwork(builtInProfile(), "api", API), Set.of(Trigger.NETWORK));
        ManagedSandbox s = sandbox(api);
        Command.UpdateNetwork same = new Command.UpdateNetwork(s.id(), API);
        assertThatCode(() -> gate.check(updateNetwork(Fixtures.caller(ALICE, same), same, s))).doesNotThrowAnyException();
        assertThat(approvals.pending()).isEmpty();
    }

    @Test
    void theServersOwnCommandsAreNotGated() {
        assertThatCode(() -> gate.check(admission(Caller.SERVER, new Command.Destroy("al-test-0123456789abcdef"))))
                .doesNotThrowAnyException();
    }
}
