package dev.airlock.server.control;

import dev.airlock.core.AirlockException.Kind;
import dev.airlock.server.command.Command;
import dev.airlock.server.live.SandboxSlots;

/**
 * The server's own limit, {@code --max-sandboxes}: a create takes a server-wide slot last, after
 * any approval, so a create that waits for a person holds none.
 */
public final class ServerCapacity implements Control {

    @Override
    public String name() {
        return "capacity";
    }

    @Override
    public void check(Admission a) {
        if (!(a.command() instanceof Command.Create) || a.holds().slot() == null) {
            return;
        }
        if (a.holds().slot().takeServerSlot() instanceof SandboxSlots.ServerFull full) {
            throw refuse(Kind.LIMIT_EXCEEDED, "--max-sandboxes", "this server already holds " + full.held() + " sandboxes (counting those"
                    + " being created or destroyed), its limit of " + full.max() + " (--max-sandboxes): destroy some, or raise --max-sandboxes");
        }
    }
}
