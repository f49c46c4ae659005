package dev.airlock.server.sandbox;

import dev.airlock.core.AirlockException;
import dev.airlock.core.EndReason;
import dev.airlock.core.ExecResult;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.core.SandboxAgent.FileType;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.ExecSource;
import dev.airlock.server.command.SandboxView;
import dev.airlock.server.output.CappedSink;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Policy;
import dev.airlock.server.policy.Profile;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayInputStream;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.Map;

/**
 * Carries out a one-shot {@link Command.Run}: each step is itself a command sent through the same
 * controls as the caller (create, mkdir, writes, exec, reads, destroy), so a run is bounded,
 * approved and recorded exactly like the steps a client could take one by one. The sandbox is
 * destroyed whatever happens.
 */
final class OneShotRuns {

    private static final Logger LOG = LoggerFactory.getLogger(OneShotRuns.class);
    /** Where a run's program leaves files to return. */
    static final String OUTPUT_DIR = "/workspace/output";
    /** The most files whose content comes back, and the most bytes of each. */
    static final int MAX_RETURNED = 8;
    static final int MAX_FILE_BYTES = 1024 * 1024;
    /** The most entries of the output tree looked at. */
    private static final int MAX_SCANNED = 200;
    /** How long the sandbox may outlive the run's own timeout before expiry takes it. */
    private static final Duration MARGIN = Duration.ofMinutes(2);

    /** Sends a step as the run's caller. */
    @FunctionalInterface
    interface Steps {
        <R> R send(Caller caller, Command<R> step);
    }

    private final Steps steps;
    private final Policy policy;
    private final Duration maxTtl;

    OneShotRuns(Steps steps, Policy policy, Duration maxTtl) {
        this.steps = steps;
        this.policy = policy;
        this.maxTtl = maxTtl;
    }

    /**
     * Runs with the client's first profile. Without a timeout the profile's applies; the sandbox
     * lives the run's timeout and a margin, within the server's and the profile's maximum
     * lifetime (a run cut short by its sandbox's expiry ends like a timeout).
     */
    Command.RunResult run(Caller caller, Command.Run run) {
        if (caller.isServer()) {
            throw new AirlockException(AirlockException.Kind.INTERNAL, "the server does not run code on its own");
        }
        Profile profile = policy.profile(caller.client().profiles().getFirst());
        Duration timeout = run.timeout() != null ? run.timeout() : profile.limits().timeout();
        Duration ttl = min(min(timeout.plus(MARGIN), maxTtl), profile.maxLifetime());
        SandboxView sandbox = steps.send(caller, new Command.Create(null, null, null, null, null, run.labels(), ttl, ttl, null));
        String id = sandbox.id();
        try {
            steps.send(caller, new Command.Mkdir(id, OUTPUT_DIR, true));
            for (Map.Entry<String, byte[]> f : run.files().entrySet()) {
                steps.send(caller, new Command.WriteFile(id, Command.inWorkspace(f.getKey()), new ByteArrayInputStream(f.getValue())));
            }
            ExecResult result = steps.send(caller, new Command.Exec(id, new ExecSource.Code(run.language(), run.code()),
                    new Command.ExecOptions(null, null, run.stdin(), run.timeout()), Command.Waiter.listening(run.listener())));
            if (result.endReason() == EndReason.CANCELLED || result.endReason() == EndReason.AGENT_KILLED) {   // nothing to collect from
                return new Command.RunResult(result, List.of());
            }
            return new Command.RunResult(result, collect(caller, id));
        } finally {
            try {
                steps.send(caller, new Command.Destroy(id));
            } catch (AirlockException e) {
                LOG.debug("sandbox {} was already gone: {}", id, e.getMessage());
            }
        }
    }

    /** The files under {@value #OUTPUT_DIR}, breadth first in path order, within the bounds above. */
    private List<Command.RunOutput> collect(Caller caller, String id) {
        List<Command.RunOutput> outputs = new ArrayList<>();
        Deque<String> dirs = new ArrayDeque<>();
        dirs.add(OUTPUT_DIR);
        int scanned = 0;
        int returned = 0;
        while (!dirs.isEmpty() && scanned < MAX_SCANNED) {
            List<FileInfo> entries;
            try {
                entries = steps.send(caller, new Command.ListFiles(id, dirs.poll()));
            } catch (AirlockException e) {
                continue; // the program removed the directory, or made it something else
            }
            for (FileInfo f : entries.stream().sorted(Comparator.comparing(FileInfo::path)).toList()) {
                if (++scanned > MAX_SCANNED) {
                    break;
                }
                if (f.type() == FileType.DIRECTORY) {
                    dirs.add(f.path());
                } else if (f.type() == FileType.FILE) {
                    Command.RunOutput out = returned < MAX_RETURNED ? read(caller, id, f)
                            : new Command.RunOutput(f.path(), f.size(), null, "not returned: only the first " + MAX_RETURNED + " files come back");
                    returned += out.content() != null ? 1 : 0;
                    outputs.add(out);
                }
            }
        }
        return outputs;
    }

    private Command.RunOutput read(Caller caller, String id, FileInfo f) {
        if (f.size() > MAX_FILE_BYTES) {
            return new Command.RunOutput(f.path(), f.size(), null, "not returned: larger than 1 MiB; use a long-lived sandbox"
                    + " (MCP sandbox_create and sandbox_read_file, REST GET /v1/sandboxes/{id}/files)");
        }
        CappedSink bytes = new CappedSink(MAX_FILE_BYTES);
        try {
            steps.send(caller, new Command.ReadFile(id, f.path(), bytes));
        } catch (AirlockException e) {
            return new Command.RunOutput(f.path(), f.size(), null, "not returned: " + e.getMessage());
        }
        if (bytes.overflowed()) {
            return new Command.RunOutput(f.path(), f.size(), null, "not returned: it grew past 1 MiB while being read");
        }
        return new Command.RunOutput(f.path(), f.size(), bytes.toByteArray(), null);
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }
}
