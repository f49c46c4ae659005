package dev.airlock.server.interpreter;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.server.wire.Json;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The interpreter contexts of one sandbox, at most {@value #MAX} (each is a kernel holding memory
 * of the sandbox's budget). They die with the sandbox: its end kills their processes.
 */
public final class InterpreterContexts {

    /** The most contexts a sandbox holds at once. */
    static final int MAX = 4;

    private final Map<String, InterpreterContext> contexts = new LinkedHashMap<>();
    private int reserved;
    private int next = 1;
    private final Object creatingFirst = new Object();

    /** Held while the first context is made for a cell that names none. */
    Object creatingFirst() {
        return creatingFirst;
    }

    /** Reserves room for a new context and returns its id; {@link #add} or {@link #release} follows. */
    synchronized String reserve(String sandbox) {
        if (contexts.size() + reserved >= MAX) {
            throw new AirlockException(Kind.LIMIT_EXCEEDED, "sandbox " + sandbox + " already holds " + MAX
                    + " interpreter contexts, the most it may: delete one (DELETE /v1/sandboxes/" + sandbox + "/contexts/{context}) or reuse it");
        }
        reserved++;
        return "ctx-" + next++;
    }

    synchronized void add(InterpreterContext c) {
        reserved--;
        contexts.put(c.id(), c);
    }

    synchronized void release() {
        reserved--;
    }

    /** Puts {@code c} in the place of the context of the same id (a restart). */
    synchronized void replace(InterpreterContext c) {
        contexts.put(c.id(), c);
    }

    synchronized InterpreterContext get(String sandbox, String id) {
        InterpreterContext c = contexts.get(id);
        if (c == null) {
            throw new AirlockException(Kind.NOT_FOUND, "interpreter context " + Json.printable(id) + " does not exist in sandbox " + sandbox
                    + ": list them with GET /v1/sandboxes/" + sandbox + "/contexts, or create one with POST");
        }
        return c;
    }

    synchronized InterpreterContext remove(String sandbox, String id) {
        InterpreterContext c = get(sandbox, id);
        contexts.remove(id);
        return c;
    }

    /** Oldest first. */
    synchronized List<InterpreterContext> list() {
        return new ArrayList<>(contexts.values());
    }
}
