package dev.airlock.server.control;

import dev.airlock.core.AirlockException.Kind;
import dev.airlock.server.command.Command;
import dev.airlock.server.live.ExecutionRates;
import dev.airlock.server.live.SandboxSlots;
import dev.airlock.server.live.ServerFixtures;
import dev.airlock.server.policy.Client;
import org.junit.jupiter.api.Test;

import static dev.airlock.server.control.Fixtures.admission;
import static dev.airlock.server.control.Fixtures.builtInProfile;
import static dev.airlock.server.control.Fixtures.client;
import static dev.airlock.server.control.Fixtures.plainCreate;
import static dev.airlock.server.control.Fixtures.refusal;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

/**
 * The server's {@code --max-sandboxes}: a create that holds its client's slot takes a server-wide
 * one last; when none is left it is refused as LIMIT_EXCEEDED under the flag's name, and the
 * client slot it held goes back when its admission closes.
 */
class ServerCapacityTest {

    private final SandboxSlots slots = ServerFixtures.slots(1);
    private final ClientQuotas quotas = new ClientQuotas(slots, new ExecutionRates());
    private final ServerCapacity capacity = new ServerCapacity();

    /** A create that passed the client's quota: it holds a client slot. */
    private Admission create(Client client) {
        Command.Create c = plainCreate();
        Admission a = Fixtures.create(Fixtures.caller(client, c), builtInProfile(), c);
        quotas.check(a);
        assertThat(a.holds().slot()).isNotNull();
        return a;
    }

    @Test
    void itIsNamedCapacity() {
        assertThat(capacity.name()).isEqualTo("capacity");
    }

    @Test
    void aCreateWithinTheServersLimitGoesThrough() {
        Admission a = create(client("alice"));
        assertThatCode(() -> capacity.check(a)).doesNotThrowAnyException();
        // taking the server slot twice for one create counts it once
        assertThatCode(() -> capacity.check(a)).doesNotThrowAnyException();
    }

    @Test
    void aCreateBeyondTheServersLimitIsRefusedByTheFlag() {
        capacity.check(create(client("alice")));
        Admission second = create(client("bob"));
        Refusal r = refusal(() -> capacity.check(second));
        assertThat(r.control()).isEqualTo("capacity");
        assertThat(r.rule()).isEqualTo("--max-sandboxes");
        assertThat(r.kind()).isEqualTo(Kind.LIMIT_EXCEEDED);
        assertThat(r.message()).contains("already holds 1 sandboxes", "limit of 1", "raise --max-sandboxes");
    }

    @Test
    void aClosedAdmissionGivesItsServerSlotBack() {
        try (Admission first = create(client("alice"))) {
            capacity.check(first);
        } // the create failed after the controls: its slots come back
        Admission second = create(client("bob"));
        assertThatCode(() -> capacity.check(second)).doesNotThrowAnyException();
    }

    @Test
    void aRefusedCreateGivesItsClientSlotBackWhenItsAdmissionCloses() {
        Client bob = client("bob", 1, 0);
        capacity.check(create(client("alice")));
        try (Admission refused = create(bob)) {
            refusal(() -> capacity.check(refused));
        }
        // bob's one slot is free again: his quota does not refuse him, only the server's limit does
        Admission again = create(bob);
        assertThat(refusal(() -> capacity.check(again)).control()).isEqualTo("capacity");
    }

    @Test
    void commandsHoldingNoSlotGoThrough() {
        Command.Create c = plainCreate();
        assertThatCode(() -> capacity.check(Fixtures.create(Fixtures.caller(client("alice"), c), builtInProfile(), c)))
                .as("a create holding no client slot takes no server slot").doesNotThrowAnyException();
        Command.Destroy d = new Command.Destroy("al-test-0123456789abcdef");
        assertThatCode(() -> capacity.check(admission(Fixtures.caller(client("alice"), d), d))).doesNotThrowAnyException();
    }
}
