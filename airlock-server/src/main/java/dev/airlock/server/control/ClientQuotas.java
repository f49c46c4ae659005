package dev.airlock.server.control;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.server.command.Command;
import dev.airlock.server.live.ExecutionRates;
import dev.airlock.server.live.SandboxSlots;
import dev.airlock.server.policy.Client;

/**
 * A client's quotas: the sandboxes it may hold at once ({@code quotas.sandboxes}: a create holds
 * one of its slots, from before any approval until the sandbox is gone) and the executions it may
 * start per minute ({@code quotas.executionsPerMinute}).
 */
public final class ClientQuotas implements Control {

    private final SandboxSlots slots;
    private final ExecutionRates rates;

    public ClientQuotas(SandboxSlots slots, ExecutionRates rates) {
        this.slots = slots;
        this.rates = rates;
    }

    @Override
    public String name() {
        return "quota";
    }

    @Override
    public void check(Admission a) {
        Client client = a.caller().client();
        if (client == null) {
            return;
        }
        switch (a.command()) {
            case Command.Create c -> a.holds().slot(switch (slots.reserveForClient(client)) {
                case SandboxSlots.Reserved r -> r.slot();
                case SandboxSlots.ClientQuotaReached q -> throw refuse(Kind.LIMIT_EXCEEDED, client.rule("quotas.sandboxes"), "client '"
                        + client.name() + "' already holds " + q.held() + " sandboxes (counting those being created or destroyed, on every"
                        + " node of a cluster), its quota (rule " + client.rule("quotas.sandboxes") + "): destroy some first");
                case SandboxSlots.ServerFull f -> throw new IllegalStateException("a client slot never reports the server full");
            });
            case Command.Exec e -> execution(client);
            case Command.StartProcess s -> execution(client);
            case Command.RunCell r -> execution(client);
            default -> {
            }
        }
    }

    private void execution(Client client) {
        try {
            rates.acquire(client);
        } catch (AirlockException e) {
            throw refuse(e.kind(), client.rule("quotas.executionsPerMinute"), e.getMessage());
        }
    }
}
