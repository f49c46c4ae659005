package dev.airlock.server;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Printable;
import dev.airlock.server.policy.Caller;

import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The sandboxes this server holds, as each caller may see them: a client sees its own, the server
 * all; a sandbox being destroyed is seen by nobody. Another client's sandbox is NOT_FOUND, as if
 * it did not exist.
 */
final class Sandboxes {

    private final Map<String, ManagedSandbox> all = new ConcurrentHashMap<>();

    /** The live map, for the teardown that removes a sandbox once it is gone. */
    Map<String, ManagedSandbox> map() {
        return all;
    }

    void add(ManagedSandbox s) {
        all.put(s.id(), s);
    }

    static boolean visible(Caller c, ManagedSandbox s) {
        return s != null && (c.isServer() || s.owner().equals(c.client().name()));
    }

    /** Whether {@code c} may see sandbox {@code id} (for filing a request's records under it). */
    boolean visibleTo(Caller c, String id) {
        return id != null && visible(c, all.get(id));
    }

    /** The sandbox, if {@code c} may see it; counts as activity against its idle timeout. */
    ManagedSandbox get(Caller c, String id) {
        ManagedSandbox s = id == null ? null : all.get(id);
        if (!visible(c, s) || s.destroying()) {
            throw notFound(id);
        }
        s.touch();
        return s;
    }

    /** The sandbox with this id whoever owns it, or null (the egress proxy's hook). */
    ManagedSandbox find(String id) {
        return all.get(id);
    }

    List<ManagedSandbox> list(Caller c, Map<String, String> labels) {
        return all.values().stream().filter(s -> visible(c, s) && !s.destroying() && s.matches(labels))
                .sorted(Comparator.comparing(ManagedSandbox::createdAt)).toList();
    }

    Collection<ManagedSandbox> values() {
        return all.values();
    }

    int size() {
        return all.size();
    }

    static AirlockException notFound(String id) {
        return new AirlockException(Kind.NOT_FOUND, "sandbox " + Printable.of(id)
                + " does not exist (it may have expired or been destroyed): list sandboxes with GET /v1/sandboxes (MCP: sandbox_list)");
    }
}
