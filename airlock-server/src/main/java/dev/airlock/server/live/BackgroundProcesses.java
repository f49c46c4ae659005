package dev.airlock.server.live;

import dev.airlock.core.AirlockException;
import dev.airlock.server.output.ProcessOutputFiles;
import dev.airlock.server.output.SpilledOutput;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The background processes of one sandbox, in the order they started: at most
 * {@value #MAX_RUNNING} running (more is refused) and {@value #MAX_KEPT} kept in all, running or
 * ended; past that, the oldest ended ones are evicted, so a client that starts processes forever
 * holds a bounded list on the server. Their output on disk shares one budget of
 * {@value #STORED_OUTPUT_LIMITS} output limits.
 */
public final class BackgroundProcesses {

    /** Background processes that may run at once in one sandbox. */
    static final int MAX_RUNNING = 64;
    /** Background processes kept per sandbox, running or ended; the oldest ended go first. */
    static final int MAX_KEPT = 128;
    /**
     * The output the processes of one sandbox may hold on disk at once, in output limits: past it,
     * their further output is dropped (and their results say truncated) until ended ones are evicted.
     */
    static final int STORED_OUTPUT_LIMITS = 8;

    private final String sandboxId;
    private final long storedBudget;
    /** Bytes of output its processes hold on disk now. */
    private final AtomicLong stored = new AtomicLong();
    private final Map<String, BackgroundProcess> kept = new LinkedHashMap<>();
    /** WebSockets attached to the terminals of these processes, at most {@link ProcessTerminal#MAX_PER_SANDBOX}. */
    private final AtomicInteger terminalSockets = new AtomicInteger();
    private int nextId = 1;
    private int starting;

    /** @param outputLimit the sandbox's output limit, per stream and execution */
    BackgroundProcesses(String sandboxId, long outputLimit) {
        this.sandboxId = sandboxId;
        this.storedBudget = STORED_OUTPUT_LIMITS * outputLimit;
    }

    /** Opens the output files of the process {@code processId}, within this sandbox's budget on disk. */
    public SpilledOutput spill(ProcessOutputFiles files, String processId) {
        return files.create(sandboxId, processId, stored, storedBudget);
    }

    /** The terminal of the process {@code processId}, whose output also goes to {@code files}. */
    public ProcessTerminal terminal(String processId, SpilledOutput files) {
        return new ProcessTerminal(processId, files, terminalSockets);
    }

    /**
     * Takes a running slot for a process about to start and returns its id; give it back with
     * {@link #release()} if the start fails, or hand over the process with {@link #add}.
     */
    public synchronized String reserve() {
        long running = kept.values().stream().filter(BackgroundProcess::running).count() + starting;
        if (running >= MAX_RUNNING) {
            throw new AirlockException(AirlockException.Kind.LIMIT_EXCEEDED, "sandbox " + sandboxId + " already runs " + MAX_RUNNING
                    + " background processes, the most one sandbox may run: kill some first, or wait for them to end");
        }
        starting++;
        return "p-" + nextId++;
    }

    public synchronized void release() {
        starting--;
    }

    /** Keeps a started process (its slot reserved); returns the ended ones evicted to make room, for their files to go. */
    public synchronized List<BackgroundProcess> add(BackgroundProcess process) {
        starting--;
        kept.put(process.id(), process);
        List<BackgroundProcess> evicted = new ArrayList<>();
        for (Iterator<BackgroundProcess> it = kept.values().iterator(); kept.size() > MAX_KEPT && it.hasNext(); ) {
            BackgroundProcess oldest = it.next();
            if (!oldest.running()) {
                it.remove();
                evicted.add(oldest);
            }
        }
        return evicted;
    }

    /** Oldest first. */
    synchronized List<BackgroundProcess> list() {
        return List.copyOf(kept.values());
    }

    synchronized BackgroundProcess get(String processId) {
        return kept.get(processId);
    }
}
