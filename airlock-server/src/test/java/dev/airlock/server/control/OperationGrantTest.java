package dev.airlock.server.control;

import dev.airlock.core.AirlockException.Kind;
import dev.airlock.server.command.Command;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Operation;
import dev.airlock.server.policy.Policy;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;

import static dev.airlock.server.control.Fixtures.admission;
import static dev.airlock.server.control.Fixtures.plainCreate;
import static dev.airlock.server.control.Fixtures.refusal;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

/**
 * The policy's {@code allow} list: a door asks {@link OperationGrant#decide} whether a client was
 * granted an operation at all, and in the chain the operation the request was authorized for
 * must cover the command it turned into.
 */
class OperationGrantTest {

    private static final Client ALICE = new Client("alice", Policy.sha256("a"), List.of("default"),
            Set.of(Operation.EXEC, Operation.SANDBOX_READ, Operation.RUN), 0, 0);
    private final OperationGrant grant = new OperationGrant("/etc/airlock/policy.yaml");

    @Test
    void itIsNamedGrant() {
        assertThat(grant.name()).isEqualTo("grant").isEqualTo(OperationGrant.NAME);
    }

    @Test
    void aDoorLetsThroughAnOperationTheClientWasGranted() {
        assertThat(grant.decide(ALICE, Operation.EXEC)).isNull();
        assertThat(grant.decide(ALICE, Operation.SANDBOX_READ)).isNull();
    }

    @Test
    void aDoorRefusesAnOperationTheClientWasNotGranted() {
        Refusal r = grant.decide(ALICE, Operation.SANDBOX_DESTROY);
        assertThat(r.control()).isEqualTo("grant");
        assertThat(r.rule()).isEqualTo("clients.alice.allow");
        assertThat(r.kind()).isEqualTo(Kind.PERMISSION_DENIED);
        assertThat(r.message()).contains("sandbox.destroy", "/etc/airlock/policy.yaml", "ask the operator");
        assertThat(r.tag()).isEqualTo("[refused by grant: clients.alice.allow]");
    }

    @Test
    void theAllowRecordNamesTheGrantingRule() {
        assertThat(OperationGrant.granting(ALICE, Operation.EXEC)).isEqualTo("clients.alice.allow grants exec");
    }

    @Test
    void theChainLetsThroughACommandOfTheAuthorizedOperation() {
        Command<?> exec = new Command.Signal("al-test-0123456789abcdef", "p1", 15);
        assertThatCode(() -> grant.check(admission(new Caller(ALICE, "rest", Operation.EXEC, null), exec))).doesNotThrowAnyException();
    }

    @Test
    void theChainLetsAOneShotRunCreateItsOwnSandbox() {
        assertThatCode(() -> grant.check(admission(new Caller(ALICE, "mcp-stdio", Operation.RUN, null), plainCreate())))
                .doesNotThrowAnyException();
    }

    @Test
    void theChainLetsTheServerDoAnything() {
        assertThatCode(() -> grant.check(admission(Caller.SERVER, new Command.Destroy("al-test-0123456789abcdef"))))
                .doesNotThrowAnyException();
    }

    @Test
    void theChainRefusesACommandTheAuthorizedOperationDoesNotCover() {
        // authorized to read sandboxes, the request turned into a destroy
        Caller reader = new Caller(ALICE, "rest", Operation.SANDBOX_READ, null);
        Refusal r = refusal(() -> grant.check(admission(reader, new Command.Destroy("al-test-0123456789abcdef"))));
        assertThat(r.control()).isEqualTo("grant");
        assertThat(r.rule()).isEqualTo("clients.alice.allow");
        assertThat(r.kind()).isEqualTo(Kind.PERMISSION_DENIED);
        assertThat(r.message()).contains("sandbox.read does not cover sandbox.destroy");
    }

    @Test
    void theChainRefusesACallerAuthorizedForNoOperation() {
        Caller none = new Caller(ALICE, "rest", null, null);
        Refusal r = refusal(() -> grant.check(admission(none, new Command.Metrics())));
        assertThat(r.control()).isEqualTo("grant");
        assertThat(r.rule()).isEqualTo("clients.alice.allow");
        assertThat(r.kind()).isEqualTo(Kind.PERMISSION_DENIED);
        assertThat(r.message()).contains("operation (none) does not cover metrics");
    }

    @Test
    void aOneShotRunDoesNotCoverAnythingBeyondItsOwnSteps() {
        Caller run = new Caller(ALICE, "mcp-stdio", Operation.RUN, null);
        Refusal r = refusal(() -> grant.check(admission(run, new Command.UpdateNetwork("al-test-0123456789abcdef", null))));
        assertThat(r.control()).isEqualTo("grant");
        assertThat(r.rule()).isEqualTo("clients.alice.allow");
        assertThat(r.message()).contains("run does not cover network.update");
    }
}
