package dev.airlock.server.live;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Printable;
import dev.airlock.server.command.Command;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Operation;

import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The sandboxes this server holds, as each caller may see them: a client sees its own, the server
 * all; a sandbox being destroyed is seen by nobody. Another client's sandbox is NOT_FOUND, as if
 * it did not exist, but to a client granted {@code sandbox.any} for the commands that
 * {@linkplain Command#reachesAnyOwner reach any owner's} sandbox (list, describe, egress, file
 * listing, extend, destroy). This is the one place that decides whose sandbox a command may name.
 */
public final class Sandboxes {

    private final Map<String, ManagedSandbox> all = new ConcurrentHashMap<>();

    /** The live map, for the teardown that removes a sandbox once it is gone. */
    public Map<String, ManagedSandbox> map() {
        return all;
    }

    public void add(ManagedSandbox s) {
        all.put(s.id(), s);
    }

    /** Whether {@code c} may send {@code command} (null: any command it is granted) to {@code s}. */
    static boolean visible(Caller c, ManagedSandbox s, Command<?> command) {
        if (s == null) {
            return false;
        }
        if (c.isServer() || s.owner().equals(c.client().name())) {
            return true;
        }
        return c.client().may(Operation.SANDBOX_ANY) && (command == null || command.reachesAnyOwner());
    }

    /** Whether {@code c} may see sandbox {@code id} at all (for filing a request's records under it). */
    public boolean visibleTo(Caller c, String id) {
        return id != null && visible(c, all.get(id), null);
    }

    /**
     * The sandbox {@code command} names, if {@code c} may send it there. Its owner's command counts
     * as activity against its idle timeout; an operator's look at another's sandbox does not keep it.
     */
    public ManagedSandbox get(Caller c, Command<?> command) {
        String id = command.sandbox();
        ManagedSandbox s = id == null ? null : all.get(id);
        if (!visible(c, s, command) || s.destroying()) {
            throw notFound(id);
        }
        if (c.isServer() || s.owner().equals(c.client().name())) {
            s.touch();
        }
        return s;
    }

    /** The sandbox with this id whoever owns it, or null (the egress proxy's hook). */
    public ManagedSandbox find(String id) {
        return all.get(id);
    }

    public List<ManagedSandbox> list(Caller c, Command.ListSandboxes command) {
        return all.values().stream().filter(s -> visible(c, s, command) && !s.destroying() && s.matches(command.labels()))
                .sorted(Comparator.comparing(ManagedSandbox::createdAt)).toList();
    }

    public Collection<ManagedSandbox> values() {
        return all.values();
    }

    public int size() {
        return all.size();
    }

    public static AirlockException notFound(String id) {
        return new AirlockException(Kind.NOT_FOUND, "sandbox " + Printable.of(id)
                + " does not exist (it may have expired or been destroyed): list sandboxes with GET /v1/sandboxes (MCP: sandbox_list)");
    }
}
