package dev.airlock.server.sandbox;

import dev.airlock.core.AirlockException;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Execution;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.ExecSource;
import dev.airlock.server.control.Admission;
import dev.airlock.server.live.BackgroundProcess;
import dev.airlock.server.live.BackgroundProcesses;
import dev.airlock.server.live.ExecutionRecords;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.live.ProcessTerminal;
import dev.airlock.server.live.Tiers;
import dev.airlock.server.output.ProcessOutputFiles;
import dev.airlock.server.output.SpilledOutput;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.terminal.TerminalSocket;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * Carries out executions once the controls let them through: a run to the end, a background
 * process with its output spilled to files, a signal. Each is recorded as it starts and ends
 * ({@link ExecutionRecords}); code is written into the sandbox only here, after every control.
 */
final class Executions {

    private final Tiers tiers;
    private final ExecutionRecords records;
    private final ProcessOutputFiles processOutputs;
    private final ServerMetrics metrics;

    Executions(Tiers tiers, ExecutionRecords records, ProcessOutputFiles processOutputs, ServerMetrics metrics) {
        this.tiers = tiers;
        this.records = records;
        this.processOutputs = processOutputs;
        this.metrics = metrics;
    }

    /** Runs to the end, waited for as the command's door asked. */
    ExecResult exec(Admission a, Command.Exec e) {
        ManagedSandbox s = a.sandbox();
        if (e.options().tty() != null) {
            throw AirlockException.invalid("a process on a terminal runs in the background: start it as a background process and attach to it");
        }
        ExecRequest request = request(a, e.source(), e.options(), null);
        s.executionStarted();
        records.started(s, request, null);
        try {
            ExecResult r = e.waiter().await(listener -> s.sandbox().start(request, listener));
            metrics.execEnded(r);
            records.ended(s, r, null, -1, -1);
            return r;
        } catch (IOException ex) {
            records.failed(s, null, ex);
            throw new UncheckedIOException(ex);
        } catch (RuntimeException ex) {
            records.failed(s, null, ex);
            throw ex;
        } finally {
            s.executionEnded();
        }
    }

    /**
     * Starts a process that runs on without a request waiting for it; its output goes to files in
     * the data directory ({@link ProcessOutputFiles}), and the sandbox keeps a bounded list of
     * such processes ({@link BackgroundProcesses}).
     */
    BackgroundProcess start(Admission a, Command.StartProcess command) {
        ManagedSandbox s = a.sandbox();
        // long-lived work (a server, a terminal) ends with its sandbox, whose lifetime the profile bounds,
        // not at the timeout meant for one execution; a process may still ask for less
        ExecRequest request = request(a, command.source(), command.options(), a.profile().maxLifetime());
        BackgroundProcesses processes = s.backgroundProcesses();
        String processId = processes.reserve();
        SpilledOutput output;
        Execution execution;
        try {
            output = processes.spill(processOutputs, processId);
        } catch (RuntimeException e) {
            processes.release();
            throw e;
        }
        // On a terminal: its input stays open for the attached sockets, and its output goes to them too.
        ProcessTerminal terminal = request.tty() == null ? null : processes.terminal(processId, output);
        s.executionStarted();
        records.started(s, request, processId);
        try {
            execution = terminal != null ? s.sandbox().startAttached(request, terminal)
                    : command.options().openStdin() ? s.sandbox().startStreamingWithInput(request, output)
                    : s.sandbox().startStreaming(request, output);
        } catch (RuntimeException e) {
            processes.release();
            output.close();
            processOutputs.delete(output);
            s.executionEnded();
            records.failed(s, processId, e);
            throw e;
        }
        BackgroundProcess p = new BackgroundProcess(processId, request.argv(), Instant.now(), execution, output, terminal,
                new java.util.concurrent.atomic.AtomicBoolean(terminal != null || command.options().openStdin()));
        processes.add(p).forEach(evicted -> processOutputs.delete(evicted.output()));
        Caller caller = a.caller();
        // the result is recorded under the caller who started the process, bound again on its own thread
        Thread.ofVirtual().name("airlock-background-" + p.id()).start(() -> Caller.run(caller, () -> {
            try {
                ExecResult r = execution.await();
                metrics.execEnded(r);
                records.ended(s, r, processId, output.stdoutBytes(), output.stderrBytes());
            } catch (RuntimeException e) {
                records.failed(s, processId, e);
                throw e;
            } finally {
                if (terminal != null) {
                    terminal.ended(execution.result());   // after the last output; null if the end could not be read
                }
                output.close();
                s.executionEnded();
                if (!s.sandbox().isOpen()) {
                    // destroyed while this process ran: its files may have been made after the sandbox's went
                    processOutputs.deleteSandbox(s.id());
                }
            }
        }));
        return p;
    }

    /**
     * The endpoint of a WebSocket to attach to a background process's terminal, once the process
     * has one, runs, and has room for one more socket; the attach and detach are recorded by it.
     */
    TerminalSocket attach(Admission a, Command.Attach command) {
        BackgroundProcess p = a.sandbox().process(command.process());
        if (p.terminal() == null) {
            throw new AirlockException(AirlockException.Kind.CONFLICT, "process " + p.id() + " has no terminal to attach to:"
                    + " start it with \"tty\": true and \"background\": true; read its output at GET .../processes/" + p.id() + "/stdout");
        }
        if (!p.running()) {
            throw new AirlockException(AirlockException.Kind.CONFLICT, "process " + p.id() + " has ended: its output is at GET .../processes/"
                    + p.id() + "/stdout");
        }
        p.terminal().checkRoom();
        return new TerminalSocket(p, a.sandbox(), records, a.caller());
    }

    /**
     * Writes a door's input to a background process that takes it (its terminal, or its standard
     * input while open), resizes its terminal, or closes its standard input; a process that takes
     * none, or has ended, is a conflict that says how to start one that does.
     */
    BackgroundProcess input(Admission a, Command.Input command) {
        BackgroundProcess p = a.sandbox().process(command.process());
        if (!p.running()) {
            throw new AirlockException(AirlockException.Kind.CONFLICT, "process " + p.id() + " has ended: it takes no more input");
        }
        if (command.resize() != null) {
            if (p.terminal() == null) {
                throw new AirlockException(AirlockException.Kind.CONFLICT, "process " + p.id() + " has no terminal to resize: start it on one"
                        + " (\"tty\": true)");
            }
            p.execution().resize(command.resize());
        }
        if (command.data().length == 0 && !command.close()) {
            return p;
        }
        if (!p.input().get()) {
            throw new AirlockException(AirlockException.Kind.CONFLICT, "process " + p.id() + " takes no input: its standard input is closed"
                    + " (start it on a terminal, or with its standard input open, to write to it)");
        }
        try {
            if (command.data().length > 0) {
                p.execution().writeStdin(command.data());
            }
        } catch (java.io.IOException e) {
            throw new AirlockException(AirlockException.Kind.CONFLICT, "cannot write to process " + p.id() + ": " + e.getMessage());
        }
        if (command.close() && p.input().compareAndSet(true, false)) {
            p.execution().closeStdin();
        }
        return p;
    }

    /** Signals a background process's whole process group (SIGKILL: everything it started), and records who sent which signal to which process. */
    BackgroundProcess signal(Admission a, Command.Signal command) {
        BackgroundProcess p = a.sandbox().process(command.process());
        p.execution().signal(command.signal());
        records.signalled(a.sandbox(), p.id(), command.signal());
        return p;
    }

    /**
     * The request that runs {@code source}: a command as given, code written into the sandbox and
     * run with the interpreter of its language (resolved on the admission).
     */
    /** {@code defaultTimeout}: what an execution that names no timeout gets; null, the sandbox's execution timeout. */
    private ExecRequest request(Admission a, ExecSource source, Command.ExecOptions o, Duration defaultTimeout) {
        List<String> argv = switch (source) {
            case ExecSource.Command c -> c.argv();
            case ExecSource.Code c -> {
                tiers.forTier(a.sandbox().isolation()).driver().check(a.sandbox().sandbox().spec(), List.of(a.language().interpreter()));
                yield a.sandbox().sandbox().codeRequest(a.language(), c.code()).argv();
            }
        };
        return new ExecRequest(argv, o.env(), o.cwd(), o.stdin(), o.timeout() != null ? o.timeout() : defaultTimeout, o.tty());
    }
}
