package dev.airlock.server.mcp;

import dev.airlock.core.AirlockException;
import dev.airlock.server.command.Command;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.command.CommandApi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Which sandboxes belong to which MCP session, and the end of sessions. A sandbox made with
 * {@code sandbox_create} without an explicit {@code ttlSeconds} belongs to the session that made it
 * and is destroyed when that session ends: the stdio process exits, the HTTP client sends DELETE,
 * or the HTTP session sits idle for {@link #IDLE_SESSION}. A session that ended here is refused
 * afterwards (404, so the client starts a new one) rather than finding its sandboxes gone.
 *
 * <p>Only sessions the SDK opened are kept: a request naming an unknown session id creates
 * nothing here. Each client holds at most {@link #MAX_SESSIONS_PER_CLIENT} sessions (a new one
 * ends its least recently used idle session), and at most {@link #MAX_ENDED} ended ids are
 * remembered.
 *
 * <p>On a node of a cluster a session's {@code sandbox_create} and {@code sandbox_fork} may be
 * carried out by another node (docs/cluster.md, "MCP tool calls"): the session here then names
 * that node, and tells it when the session ends; there, the sandboxes belong to the session under
 * the name {@code <node>/<session>} ({@link #remote}), which only that notice ends (not idleness:
 * the calls of the session go to its own node), and which is dropped once none of its sandboxes is
 * left (a node that died sends no notice; its sessions' sandboxes end at their own idle time).
 */
final class SessionSandboxes implements AutoCloseable {

    /** An HTTP session with no request for this long has ended. */
    static final Duration IDLE_SESSION = Duration.ofMinutes(30);
    private static final Duration REMEMBER_ENDED = Duration.ofHours(24);
    /** Open HTTP sessions of one client; opening one more ends the client's least recently used idle one. */
    static final int MAX_SESSIONS_PER_CLIENT = 64;
    /**
     * Sandbox ids a session holds before those of sandboxes already gone (expired, destroyed by
     * REST) are dropped from it; the live ones are bounded by quotas and {@code --max-sandboxes}.
     */
    static final int PRUNE_SANDBOXES_ABOVE = 256;
    /** Ended session ids remembered (to answer 404 instead of a confusing loss of sandboxes); the oldest go first. */
    static final int MAX_ENDED = 4096;
    private static final Logger LOG = LoggerFactory.getLogger(SessionSandboxes.class);

    private static final class Session {
        final Set<String> sandboxes = ConcurrentHashMap.newKeySet();
        /** The other nodes of a cluster that made sandboxes for it: told when it ends (at most one entry per node). */
        final Set<String> elsewhere = ConcurrentHashMap.newKeySet();
        final AtomicInteger inFlight = new AtomicInteger();
        /** The policy client that opened it (HTTP); no other client's request may touch it. */
        volatile String client;
        volatile Instant lastSeen = Instant.now();
    }

    private final CommandApi service;
    private final Map<String, Session> sessions = new ConcurrentHashMap<>();
    /** The notices to other nodes that a session ended, one virtual thread each, in flight. */
    private final java.util.concurrent.ExecutorService notices = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor();
    private final Map<String, Instant> ended = Collections.synchronizedMap(new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Instant> eldest) {
            return size() > MAX_ENDED;
        }
    });
    private final Thread sweeper;
    private volatile boolean closed;

    SessionSandboxes(CommandApi service, boolean sweepIdle) {
        this.service = service;
        this.sweeper = sweepIdle ? Thread.ofVirtual().name("airlock-mcp-sessions").start(this::sweepLoop) : null;
    }

    void own(String session, String sandboxId) {
        Set<String> owned = session(session).sandboxes;
        owned.add(sandboxId);
        if (owned.size() > PRUNE_SANDBOXES_ABOVE) {
            Set<String> live = new HashSet<>();
            service.execute(Caller.SERVER, new Command.ListSandboxes(Map.of())).forEach(s -> live.add(s.id()));
            owned.retainAll(live);
        }
    }

    /** Node {@code node} of the cluster made a sandbox for {@code session}: it is told when the session ends. */
    void ownElsewhere(String session, String node) {
        session(session).elsewhere.add(node);
    }

    /** The name here of a session of another node of a cluster, whose calls that node sent on. */
    static String remote(String node, String session) {
        return node + "/" + session;
    }

    private static boolean isRemote(String session) {
        return session.indexOf('/') >= 0;
    }

    boolean owns(String session, String sandboxId) {
        Session s = sessions.get(session);
        return s != null && s.sandboxes.contains(sandboxId);
    }

    void disown(String sandboxId) {
        sessions.values().forEach(s -> s.sandboxes.remove(sandboxId));
    }

    /**
     * Records that the SDK opened {@code session} for {@code client}. When the client already
     * holds {@link #MAX_SESSIONS_PER_CLIENT}, its least recently used idle session is ended and
     * returned, for the transport to forget too; null when none was.
     */
    String claim(String session, String client) {
        String oldest = claimAndPickEviction(session, client);
        if (oldest != null) {
            end(oldest, "was the least recently used of client " + client + "'s " + MAX_SESSIONS_PER_CLIENT
                    + " sessions when it opened another");
        }
        return oldest;
    }

    private synchronized String claimAndPickEviction(String session, String client) {
        session(session).client = client;
        List<Map.Entry<String, Session>> own = sessionsOf(client);
        if (own.size() <= MAX_SESSIONS_PER_CLIENT) {
            return null;
        }
        return own.stream().filter(e -> !e.getKey().equals(session) && e.getValue().inFlight.get() <= 0)
                .min(Comparator.comparing(e -> e.getValue().lastSeen)).map(Map.Entry::getKey).orElse(null);
    }

    /** False when {@code client} holds its most sessions and none is idle: a new one would exceed the bound. */
    boolean mayOpen(String client) {
        List<Map.Entry<String, Session>> own = sessionsOf(client);
        return own.size() < MAX_SESSIONS_PER_CLIENT || own.stream().anyMatch(e -> e.getValue().inFlight.get() <= 0);
    }

    private List<Map.Entry<String, Session>> sessionsOf(String client) {
        return sessions.entrySet().stream().filter(e -> client.equals(e.getValue().client)).toList();
    }

    /** Sessions kept now, and ended ids remembered (for tests of the bounds). */
    int size() {
        return sessions.size();
    }

    int endedSize() {
        return ended.size();
    }

    /** The client that opened {@code session}, or null when none is known. */
    String clientOf(String session) {
        Session s = sessions.get(session);
        return s == null ? null : s.client;
    }

    boolean hasEnded(String session) {
        return ended.containsKey(session);
    }

    /** A request of a known {@code session} began; pair with {@link #requestEnded}. Unknown ids are not kept. */
    void requestStarted(String session) {
        Session s = sessions.get(session);
        if (s != null) {
            s.inFlight.incrementAndGet();
            s.lastSeen = Instant.now();
        }
    }

    void requestEnded(String session) {
        Session s = sessions.get(session);
        if (s != null) {
            s.inFlight.decrementAndGet();
            s.lastSeen = Instant.now();
        }
    }

    /** Ends {@code session}: destroys the sandboxes it owns. */
    void end(String session, String why) {
        Session s = sessions.remove(session);
        if (s == null) {
            return;
        }
        ended.put(session, Instant.now());
        for (String id : s.sandboxes) {
            try {
                service.execute(Caller.SERVER, new Command.Destroy(id));
                LOG.info("destroyed sandbox {}: its MCP session {}", id, why);
            } catch (AirlockException e) {
                // already gone: expired or destroyed by hand
            }
        }
        var routing = service.routing();
        if (routing != null && s.client != null) {
            // each node told on a thread of its own: a node that hangs (up to NodeRouting.ASK) holds up neither the others nor
            // whoever ended the session (the client's DELETE, the sweeper); the server's stop waits for them all (close)
            for (String node : s.elsewhere) {
                Runnable notice = () -> routing.sessionEnded(node, s.client, session);
                try {
                    notices.execute(notice);
                } catch (java.util.concurrent.RejectedExecutionException stopped) {
                    notice.run(); // a session ended while the server stops: told on this thread
                }
            }
        }
    }

    private Session session(String id) {
        return sessions.computeIfAbsent(id, k -> new Session());
    }

    private void sweepLoop() {
        while (!closed) {
            try {
                Thread.sleep(30_000);
            } catch (InterruptedException e) {
                return;
            }
            Instant now = Instant.now();
            sessions.forEach((id, s) -> {
                if (isRemote(id)) {
                    // another node's session: ended by its notice; dropped here once nothing of it is left
                    s.sandboxes.removeIf(sandbox -> !service.live(sandbox));
                    if (s.sandboxes.isEmpty()) {
                        sessions.remove(id, s);
                    }
                } else if (s.inFlight.get() <= 0 && s.lastSeen.plus(IDLE_SESSION).isBefore(now)) {
                    end(id, "was idle for " + IDLE_SESSION.toMinutes() + " minutes");
                }
            });
            synchronized (ended) {
                ended.values().removeIf(at -> at.plus(REMEMBER_ENDED).isBefore(now));
            }
        }
    }

    /** Ends every session. */
    @Override
    public void close() {
        closed = true;
        if (sweeper != null) {
            sweeper.interrupt();
        }
        for (String id : Set.copyOf(sessions.keySet())) {
            end(id, "ended with the server");
        }
        notices.close(); // waits for the notices in flight, each bounded by NodeRouting.ASK
    }
}
