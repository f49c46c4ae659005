package dev.airlock.server.control;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.command.Command;
import dev.airlock.server.policy.Approval;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Operation;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static dev.airlock.server.control.Fixtures.admission;
import static dev.airlock.server.control.Fixtures.client;
import static dev.airlock.server.control.Fixtures.refusal;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/** An approval is decided by another client than the one that asked for it. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SeparationOfDutiesTest {

    private static final Client ALICE = client("alice");
    private static final Client BOB = client("bob");

    @TempDir
    Path dir;
    private AuditLog audit;
    private Approvals approvals;
    private SeparationOfDuties duties;
    private Thread asking;

    /** Alice's create, waiting for a person until the test decides it. */
    private Approval asked;

    @BeforeEach
    void askAsAlice() {
        audit = AuditLog.open(dir.resolve("airlock.db"));
        approvals = new Approvals(audit, Duration.ofSeconds(20));
        duties = new SeparationOfDuties(approvals);
        Caller alice = new Caller(ALICE, "mcp-stdio", Operation.SANDBOX_CREATE, null);
        asking = Thread.ofVirtual().start(() -> {
            try {
                approvals.await(alice, Approval.Trigger.CREATE, "profiles.default.approvals (create)", null, "create a sandbox");
            } catch (AirlockException denied) {
                // the test denied it
            }
        });
        await().atMost(Duration.ofSeconds(10)).until(() -> !approvals.pending().isEmpty());
        asked = approvals.pending().getFirst();
    }

    @AfterEach
    void end() throws InterruptedException {
        if (approvals.get(asked.id()).state() == Approval.State.PENDING) {
            approvals.decide(asked.id(), false, "test", "the test ended");
        }
        asking.join(10_000);
        audit.close();
    }

    private static Admission decide(Client by, String approval) {
        Command.Decide d = new Command.Decide(approval, true, "rest:" + by.name(), null);
        return admission(Fixtures.caller(by, d), d);
    }

    @Test
    void itIsNamedDuties() {
        assertThat(duties.name()).isEqualTo("duties");
    }

    @Test
    void anotherClientMayDecide() {
        assertThatCode(() -> duties.check(decide(BOB, asked.id()))).doesNotThrowAnyException();
    }

    @Test
    void theServerMayDecide() {
        Command.Decide d = new Command.Decide(asked.id(), false, "server", "shutting down");
        assertThatCode(() -> duties.check(admission(Caller.SERVER, d))).doesNotThrowAnyException();
    }

    @Test
    void theAskingClientMayNotDecideItsOwnApproval() {
        Refusal r = refusal(() -> duties.check(decide(ALICE, asked.id())));
        assertThat(r.control()).isEqualTo("duties");
        assertThat(r.rule()).isEqualTo("approvals");
        assertThat(r.kind()).isEqualTo(Kind.PERMISSION_DENIED);
        assertThat(r.message()).contains(asked.id(), "client 'alice' itself", "separation of duties");
    }

    @Test
    void theAskingClientMayNotDecideItAgainOnceDecided() {
        approvals.decide(asked.id(), true, "rest:bob", null);
        assertThat(refusal(() -> duties.check(decide(ALICE, asked.id()))).control()).isEqualTo("duties");
    }

    @Test
    void anUnknownApprovalIsNotFoundRatherThanRefused() {
        assertThatThrownBy(() -> duties.check(decide(ALICE, "ap-0000000000000000")))
                .isInstanceOf(AirlockException.class).isNotInstanceOf(Refused.class)
                .satisfies(e -> assertThat(((AirlockException) e).kind()).isEqualTo(Kind.NOT_FOUND));
    }

    @Test
    void otherApprovalCommandsGoThrough() {
        for (Command<?> c : List.<Command<?>>of(new Command.ListApprovals(), new Command.DescribeApproval(asked.id()))) {
            assertThatCode(() -> duties.check(admission(Fixtures.caller(ALICE, c), c))).doesNotThrowAnyException();
        }
    }
}
