package dev.airlock.server.control;

import dev.airlock.core.AirlockException.Kind;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.ExecSource;
import dev.airlock.server.live.ExecutionRates;
import dev.airlock.server.live.SandboxSlots;
import dev.airlock.server.live.ServerFixtures;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Client;
import org.junit.jupiter.api.Test;

import java.util.List;

import static dev.airlock.server.control.Fixtures.admission;
import static dev.airlock.server.control.Fixtures.builtInProfile;
import static dev.airlock.server.control.Fixtures.client;
import static dev.airlock.server.control.Fixtures.plainCreate;
import static dev.airlock.server.control.Fixtures.refusal;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

/**
 * A client's quotas: a create holds one of the client's sandbox slots on its admission (released
 * when the admission closes, unless the handler took it), and an execution counts against the
 * client's executions per minute. Both refusals are LIMIT_EXCEEDED: waiting or destroying is the fix.
 */
class ClientQuotasTest {

    private static final String SANDBOX_ID = "al-test-0123456789abcdef";
    private final SandboxSlots slots = ServerFixtures.slots(100);
    private final ClientQuotas quotas = new ClientQuotas(slots, new ExecutionRates());

    private static Admission create(Client client) {
        Command.Create c = plainCreate();
        return Fixtures.create(Fixtures.caller(client, c), builtInProfile(), c);
    }

    private static Admission exec(Client client) {
        Command.Exec e = new Command.Exec(SANDBOX_ID, new ExecSource.Command(List.of("true")), null, null);
        return admission(Fixtures.caller(client, e), e);
    }

    private static Admission startProcess(Client client) {
        Command.StartProcess s = new Command.StartProcess(SANDBOX_ID, new ExecSource.Command(List.of("true")), null);
        return admission(Fixtures.caller(client, s), s);
    }

    @Test
    void itIsNamedQuota() {
        assertThat(quotas.name()).isEqualTo("quota");
    }

    @Test
    void aCreateHoldsOneOfTheClientsSlotsOnItsAdmission() {
        Admission a = create(client("alice", 1, 0));
        quotas.check(a);
        assertThat(a.holds().slot()).as("the slot the create holds").isNotNull();
    }

    @Test
    void aCreateBeyondTheClientsQuotaIsRefused() {
        Client alice = client("alice", 2, 0);
        quotas.check(create(alice));
        quotas.check(create(alice));
        Admission third = create(alice);
        Refusal r = refusal(() -> quotas.check(third));
        assertThat(r.control()).isEqualTo("quota");
        assertThat(r.rule()).isEqualTo("clients.alice.quotas.sandboxes");
        assertThat(r.kind()).isEqualTo(Kind.LIMIT_EXCEEDED);
        assertThat(r.message()).contains("already holds 2 sandboxes", "destroy some first");
        assertThat(third.holds().slot()).as("a refused create holds nothing").isNull();
        // another client's quota is its own
        assertThatCode(() -> quotas.check(create(client("bob", 1, 0)))).doesNotThrowAnyException();
    }

    @Test
    void closingTheAdmissionReleasesASlotTheHandlerDidNotTake() {
        Client alice = client("alice", 1, 0);
        try (Admission failed = create(alice)) {
            quotas.check(failed);
            assertThat(refusal(() -> quotas.check(create(alice))).rule()).isEqualTo("clients.alice.quotas.sandboxes");
        } // the create went no further: its slot comes back
        assertThatCode(() -> quotas.check(create(alice))).doesNotThrowAnyException();
    }

    @Test
    void aSlotTheHandlerTookStaysHeldAfterTheAdmissionCloses() {
        Client alice = client("alice", 1, 0);
        SandboxSlots.Slot taken;
        try (Admission created = create(alice)) {
            quotas.check(created);
            taken = created.holds().takeSlot();
            assertThat(taken).isNotNull();
            assertThat(created.holds().slot()).isNull();
        }
        assertThat(refusal(() -> quotas.check(create(alice))).rule()).as("the sandbox still counts")
                .isEqualTo("clients.alice.quotas.sandboxes");
        taken.release(); // the sandbox is gone
        assertThatCode(() -> quotas.check(create(alice))).doesNotThrowAnyException();
    }

    @Test
    void aClientWithoutAQuotaCreatesFreely() {
        Client unlimited = client("carol", 0, 0);
        for (int i = 0; i < 20; i++) {
            assertThatCode(() -> quotas.check(create(unlimited))).doesNotThrowAnyException();
        }
    }

    @Test
    void executionsBeyondTheClientsRateAreRefused() {
        Client alice = client("alice", 0, 2);
        quotas.check(exec(alice));
        quotas.check(startProcess(alice)); // a background process counts as an execution too
        for (Admission third : List.of(exec(alice), startProcess(alice))) {
            Refusal r = refusal(() -> quotas.check(third));
            assertThat(r.control()).isEqualTo("quota");
            assertThat(r.rule()).isEqualTo("clients.alice.quotas.executionsPerMinute");
            assertThat(r.kind()).isEqualTo(Kind.LIMIT_EXCEEDED);
            assertThat(r.message()).contains("2 executions in the last minute", "retry in");
        }
        assertThatCode(() -> quotas.check(exec(client("bob", 0, 1)))).as("bob's rate is his own").doesNotThrowAnyException();
    }

    @Test
    void otherCommandsCountAgainstNoQuota() {
        Client alice = client("alice", 1, 1);
        for (Command<?> c : List.<Command<?>>of(new Command.Destroy(SANDBOX_ID), new Command.Signal(SANDBOX_ID, "p", 9),
                new Command.Stat(SANDBOX_ID, "x"), new Command.ListSandboxes(null))) {
            Admission a = admission(Fixtures.caller(alice, c), c);
            quotas.check(a);
            assertThat(a.holds().slot()).isNull();
        }
        // her one create and her one execution are still there to use
        assertThatCode(() -> quotas.check(create(alice))).doesNotThrowAnyException();
        assertThatCode(() -> quotas.check(exec(alice))).doesNotThrowAnyException();
    }

    @Test
    void theServersOwnCommandsCountAgainstNoQuota() {
        Admission a = admission(Caller.SERVER, new Command.Destroy(SANDBOX_ID));
        quotas.check(a);
        assertThat(a.holds().slot()).isNull();
    }
}
