package dev.airlock.server.control;

import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Language;
import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.audit.AuditReader;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.ExecSource;
import dev.airlock.server.live.ExecutionRates;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.live.ServerFixtures;
import dev.airlock.server.policy.Approval.Trigger;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Profile;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static dev.airlock.server.control.Fixtures.builtInProfile;
import static dev.airlock.server.control.Fixtures.client;
import static dev.airlock.server.control.Fixtures.onSandbox;
import static dev.airlock.server.control.Fixtures.refusal;
import static dev.airlock.server.control.Fixtures.withApprovals;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The chain runs its controls in order; the first refusal stops the command, and exactly one
 * {@code authorization} deny record names the operation, the control, its rule and the class of
 * refusal.
 */
class ControlChainTest {

    private static final Client ALICE = client("alice");
    private static final JsonMapper JSON = JsonMapper.builder().build();

    @TempDir
    Path dir;
    private AuditLog audit;
    private final List<String> ran = new ArrayList<>();

    @BeforeEach
    void open() {
        audit = AuditLog.open(dir.resolve("airlock.db"));
    }

    @AfterEach
    void close() {
        audit.close();
    }

    /** A control that notes that it ran, and refuses when given a kind. */
    private Control control(String name, Kind refuses) {
        return new Control() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public void check(Admission admission) {
                ran.add(name);
                if (refuses != null) {
                    throw refuse(refuses, "rules." + name, name + " says no");
                }
            }
        };
    }

    private Admission exec(ManagedSandbox s) {
        Command.Exec e = new Command.Exec(s.id(), new ExecSource.Command(List.of("true")), null, null);
        return onSandbox(Fixtures.caller(ALICE, e), e, s, null);
    }

    private List<AuditRecord> authorizationRecords() throws InterruptedException {
        assertThat(audit.flush(10_000)).as("the audit log wrote what was queued").isTrue();
        try (AuditReader reader = AuditReader.open(dir.resolve("airlock.db"))) {
            return reader.query(new AuditReader.Query(null, AuditRecord.AUTHORIZATION, null, 0));
        }
    }

    @Test
    void everyControlRunsInOrderAndNothingIsRecordedWhenAllLetThrough() throws Exception {
        ControlChain chain = new ControlChain(List.of(control("first", null), control("second", null), control("third", null)), audit);
        assertThat(chain.controls()).extracting(Control::name).containsExactly("first", "second", "third");
        chain.check(exec(ServerFixtures.sandbox("alice", builtInProfile(), Instant.now(), Duration.ofMinutes(5), Language.PYTHON)));
        assertThat(ran).containsExactly("first", "second", "third");
        assertThat(authorizationRecords()).isEmpty();
    }

    @Test
    void theFirstRefusalStopsTheChainAndIsRecordedOnce() throws Exception {
        ControlChain chain = new ControlChain(List.of(control("first", null), control("second", Kind.LIMIT_EXCEEDED),
                control("third", Kind.PERMISSION_DENIED)), audit);
        ManagedSandbox s = ServerFixtures.sandbox("alice", builtInProfile(), Instant.now(), Duration.ofMinutes(5), Language.PYTHON);
        Admission a = exec(s);

        Refusal r = refusal(() -> Caller.run(a.caller(), () -> chain.check(a)));
        assertThat(r).isEqualTo(new Refusal("second", "rules.second", Kind.LIMIT_EXCEEDED, "second says no"));
        assertThat(ran).as("the controls after the refusal did not run").containsExactly("first", "second");

        List<AuditRecord> records = authorizationRecords();
        assertThat(records).hasSize(1);
        AuditRecord deny = records.getFirst();
        assertThat(deny.actor()).isEqualTo("alice@rest");
        assertThat(deny.sandbox()).isEqualTo(s.id());
        JsonNode d = JSON.readTree(deny.detail());
        assertThat(d.propertyNames()).containsExactlyInAnyOrder("operation", "decision", "control", "rule", "refusal");
        assertThat(d.path("operation").asString()).isEqualTo("exec");
        assertThat(d.path("decision").asString()).isEqualTo("deny");
        assertThat(d.path("control").asString()).isEqualTo("second");
        assertThat(d.path("rule").asString()).isEqualTo("rules.second");
        assertThat(d.path("refusal").asString()).isEqualTo("limit_exceeded");
    }

    @Test
    void theDenyRecordIsTheSameForEveryDoor() {
        Refusal r = new Refusal("profile", "profiles.default.maxLimits", Kind.PERMISSION_DENIED, "too big");
        assertThat(ControlChain.denial("sandbox.create", r)).containsExactly(Map.entry("operation", "sandbox.create"),
                Map.entry("decision", "deny"), Map.entry("control", "profile"), Map.entry("rule", "profiles.default.maxLimits"),
                Map.entry("refusal", "permission_denied"));
    }

    @Test
    void aCreateTheProfileRefusesNeverReachesTheQuotaOrAPerson() throws Exception {
        // the service's chain, in its order
        Approvals approvals = new Approvals(audit, Duration.ofSeconds(20));
        ControlChain chain = new ControlChain(List.of(new OperationGrant("policy.yaml"), new ProfileCeilings(),
                new ClientQuotas(ServerFixtures.slots(10), new ExecutionRates()), new ApprovalGate(approvals), new ServerCapacity(),
                new SeparationOfDuties(approvals)), audit);
        Profile gated = withApprovals(builtInProfile(), Set.of(Trigger.CREATE));
        Command.Create tooBig = new Command.Create(null, null, l -> l.withCpus(64), null, null, null, null, null, null);
        Admission a = Fixtures.create(Fixtures.caller(client("alice", 1, 0), tooBig), gated, tooBig);

        Refusal r = refusal(() -> chain.check(a));
        assertThat(r.control()).isEqualTo("profile");
        assertThat(r.rule()).isEqualTo("profiles.default.maxLimits");
        assertThat(a.holds().slot()).as("the quota control did not run").isNull();
        assertThat(approvals.pending()).as("nobody was asked").isEmpty();
        assertThat(authorizationRecords()).singleElement()
                .satisfies(rec -> assertThat(JSON.readTree(rec.detail()).path("control").asString()).isEqualTo("profile"));
    }

    @Test
    void aFailureThatIsNoRefusalPassesUnrecorded() throws Exception {
        Control broken = new Control() {
            @Override
            public String name() {
                return "broken";
            }

            @Override
            public void check(Admission admission) {
                throw new IllegalStateException("bug");
            }
        };
        ControlChain chain = new ControlChain(List.of(broken, control("after", null)), audit);
        ManagedSandbox s = ServerFixtures.sandbox("alice", builtInProfile(), Instant.now(), Duration.ofMinutes(5), Language.PYTHON);
        assertThatThrownBy(() -> chain.check(exec(s))).isInstanceOf(IllegalStateException.class);
        assertThat(ran).isEmpty();
        assertThat(authorizationRecords()).isEmpty();
    }
}
