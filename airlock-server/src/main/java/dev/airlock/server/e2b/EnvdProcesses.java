package dev.airlock.server.e2b;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.EndReason;
import dev.airlock.core.ExecResult;
import dev.airlock.core.TerminalSize;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.CommandApi;
import dev.airlock.server.command.ExecSource;
import dev.airlock.server.command.ProcessView;
import dev.airlock.server.policy.Operation;
import dev.airlock.server.wire.Json;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * envd's process service ({@code process.Process}) on the sandbox's background processes: Start and
 * Connect stream a process's events (its start, its output as it is spilled to its files, its end),
 * List names the running ones, SendSignal kills or ends one; SendInput, CloseStdin and Update feed
 * one started with its stdin open or on a PTY, and resize that PTY. E2B's pid is the pid in the sandbox.
 */
final class EnvdProcesses {

    /** The most bytes of output one data event carries. */
    static final int CHUNK = 64 * 1024;
    /** How often a followed process is looked at while it prints nothing, at most. */
    private static final long MAX_POLL_MILLIS = 200;
    /**
     * Keep-alive interval when the client asks for none, and the bounds of the one it asks for: at
     * most 20 s, since a connection silent for 30 s is closed (ConnectionGuard).
     */
    private static final long DEFAULT_KEEPALIVE_SECONDS = 20, MIN_KEEPALIVE_SECONDS = 1, MAX_KEEPALIVE_SECONDS = 20;

    /** The longest a kill's answer waits for the process to be gone. */
    private static final java.time.Duration KILL_WAIT = java.time.Duration.ofSeconds(5);

    private EnvdProcesses() {
    }

    static void start(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.EXEC);
        JsonNode m = Envd.streamed(c);
        JsonNode pty = m.get("pty");
        TerminalSize tty = pty == null || pty.isNull() ? null : size(pty);
        JsonNode process = m.path("process");
        String cmd = Json.string(process, "cmd");
        if (cmd == null || cmd.isEmpty()) {
            throw AirlockException.invalid("'process.cmd' names the program to start");
        }
        List<String> argv = new ArrayList<>();
        argv.add(cmd);
        for (JsonNode a : process.path("args")) {
            if (!a.isString()) {
                throw AirlockException.invalid("'process.args' is a list of strings");
            }
            argv.add(a.asString());
        }
        Map<String, String> env = new java.util.LinkedHashMap<>(Json.stringMap(process, "envs"));
        String cwd = Json.string(process, "cwd");
        cwd = cwd == null || cwd.isEmpty() ? Envd.HOME : cwd;
        // The shell's pwd names the directory as the SDK did (/home/user), not by what the link leads to.
        env.putIfAbsent("PWD", Envd.shown(Envd.path(cwd)));
        Command.ExecOptions options = new Command.ExecOptions(env, Envd.path(cwd), null, null, tty, Json.bool(m, "stdin"));
        ProcessView p = c.execute(new Command.StartProcess(sandbox, new ExecSource.Command(argv), options));
        follow(c, p);
    }

    static void connect(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.SANDBOX_READ);
        JsonNode m = Envd.streamed(c);
        follow(c, process(c, sandbox, m));
    }

    /** The process a selector names: by its pid in the sandbox (a tag names none here). */
    private static ProcessView process(E2bDoor.Call c, String sandbox, JsonNode request) {
        JsonNode selector = request.path("process");
        if (selector.has("tag")) {
            throw new AirlockException(Kind.NOT_FOUND, "no process has tag '" + Json.printable(selector.path("tag").asString(""), 64)
                    + "': Airlock's E2B door keeps no tags; select the process by its pid");
        }
        JsonNode pid = selector.get("pid");
        if (pid == null || !pid.canConvertToInt()) {
            throw AirlockException.invalid("'process.pid' selects the process: the pid its start event gave");
        }
        for (ProcessView p : c.execute(new Command.Describe(sandbox)).processes()) {
            if (p.pid() == pid.asInt()) {
                return p;
            }
        }
        throw new AirlockException(Kind.NOT_FOUND, "sandbox " + sandbox + " has no process with pid " + pid.asInt()
                + " (processes started through the E2B door or Airlock's API with background: true are listed)");
    }

    /** A PTY's size, {@code {"size": {"cols": C, "rows": R}}}. */
    private static TerminalSize size(JsonNode pty) {
        JsonNode size = pty.path("size");
        Double cols = Json.number(size, "cols");
        Double rows = Json.number(size, "rows");
        if (cols == null || rows == null || cols != Math.rint(cols) || rows != Math.rint(rows)) {
            throw AirlockException.invalid("'pty.size' needs whole numbers 'cols' and 'rows'");
        }
        return new TerminalSize(rows.intValue(), cols.intValue());
    }

    /**
     * SendInput: bytes for a process's stdin (started with {@code stdin: true}) or its PTY. A PTY's
     * every keystroke may be one, so they are folded on the audit log per client and sandbox.
     */
    static void input(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.EXEC, inputs(c, sandbox));
        JsonNode m = Envd.unary(c);
        JsonNode input = m.path("input");
        String data = Json.string(input, input.has("pty") ? "pty" : "stdin");
        if (data == null) {
            throw AirlockException.invalid("'input' carries 'stdin' or 'pty': the bytes, in base64");
        }
        byte[] bytes;
        try {
            bytes = Base64.getDecoder().decode(data);
        } catch (IllegalArgumentException e) {
            throw AirlockException.invalid("the input's bytes are not base64: " + e.getMessage());
        }
        c.execute(new Command.Input(sandbox, process(c, sandbox, m).id(), bytes, false, null));
        Envd.reply(c, Json.object());
    }

    /** CloseStdin: the process reads end-of-file. */
    static void closeStdin(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.EXEC);
        JsonNode m = Envd.unary(c);
        c.execute(new Command.Input(sandbox, process(c, sandbox, m).id(), null, true, null));
        Envd.reply(c, Json.object());
    }

    /** Update: a PTY's new size (a terminal window resized, folded with the input on the audit log). */
    static void update(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.EXEC, inputs(c, sandbox));
        JsonNode m = Envd.unary(c);
        JsonNode pty = m.get("pty");
        if (pty == null || pty.isNull()) {
            throw AirlockException.invalid("an Update changes a PTY's size: 'pty': {'size': {'cols': C, 'rows': R}}");
        }
        c.execute(new Command.Input(sandbox, process(c, sandbox, m).id(), null, false, size(pty)));
        Envd.reply(c, Json.object());
    }

    private static CommandApi.Repeats inputs(E2bDoor.Call c, String sandbox) {
        return new CommandApi.Repeats(E2bDoor.VIA + " input " + c.client.name() + " " + sandbox, null);
    }

    static void list(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.SANDBOX_READ);
        Envd.unary(c);
        ArrayNode processes = Json.MAPPER.createArrayNode();
        for (ProcessView p : c.execute(new Command.Describe(sandbox)).processes()) {
            if (p.running()) {
                ObjectNode info = processes.addObject();
                ObjectNode config = info.putObject("config");
                config.put("cmd", p.command().getFirst());
                ArrayNode args = config.putArray("args");
                p.command().stream().skip(1).forEach(args::add);
                config.putObject("envs");
                info.put("pid", p.pid());
            }
        }
        Envd.reply(c, Json.object().set("processes", processes));
    }

    static void signal(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.EXEC);
        JsonNode m = Envd.unary(c);
        JsonNode s = m.path("signal");
        int signal = switch (s.isNumber() ? Integer.toString(s.asInt()) : s.asString("")) {
            case "SIGNAL_SIGKILL", "9" -> 9;
            case "SIGNAL_SIGTERM", "15" -> 15;
            default -> throw AirlockException.invalid("'signal' is SIGNAL_SIGKILL or SIGNAL_SIGTERM");
        };
        ProcessView p = c.execute(new Command.Signal(sandbox, process(c, sandbox, m).id(), signal));
        if (signal == 9) {
            // a kill is answered once the process is gone, so a List right after does not show it (at most KILL_WAIT)
            long end = System.nanoTime() + KILL_WAIT.toNanos();
            while (p.running() && System.nanoTime() < end) {
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        Envd.reply(c, Json.object());
    }

    /**
     * Streams a process's events: its start, then its output as it is spilled to its files, then
     * its end; a keep-alive when it is quiet for the interval the client asked for. The stream
     * ending early (the client went away) leaves the process running, as envd does.
     */
    private static void follow(E2bDoor.Call c, ProcessView p) throws IOException {
        c.resp.setStatus(200);
        c.resp.setContentType(ConnectRpc.STREAM);
        OutputStream out = c.resp.getOutputStream();
        ConnectRpc.send(out, event("start", Json.object().put("pid", p.pid())));
        long keepAlive = keepAliveMillis(c.req.getHeader("Keepalive-Ping-Interval"));
        long[] sent = {0, 0};
        long quietSince = System.nanoTime();
        long poll = 10;
        try {
            while (true) {
                boolean ended = !p.running();
                // a PTY's output is one stream, the process's stdout
                boolean moved = copy(out, p.output().stdoutFile(), p.output().stdoutBytes(), sent, 0, p.tty() ? "pty" : "stdout")
                        | copy(out, p.output().stderrFile(), p.output().stderrBytes(), sent, 1, "stderr");
                if (ended) {
                    ConnectRpc.send(out, event("end", end(p.result())));
                    ConnectRpc.end(out, null);
                    return;
                }
                if (moved) {
                    quietSince = System.nanoTime();
                    poll = 10;
                } else if ((System.nanoTime() - quietSince) / 1_000_000 >= keepAlive) {
                    ConnectRpc.send(out, event("keepalive", Json.object()));
                    quietSince = System.nanoTime();
                }
                Thread.sleep(poll);
                poll = Math.min(MAX_POLL_MILLIS, poll * 2);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Sends what {@code file} holds beyond what was sent of it, up to {@code stored} bytes; whether anything was. */
    private static boolean copy(OutputStream out, Path file, long stored, long[] sent, int which, String stream) throws IOException {
        if (stored <= sent[which]) {
            return false;
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            while (sent[which] < stored) {
                ByteBuffer buf = ByteBuffer.allocate((int) Math.min(CHUNK, stored - sent[which]));
                int n = ch.read(buf, sent[which]);
                if (n <= 0) {
                    break;
                }
                sent[which] += n;
                ConnectRpc.send(out, event("data", Json.object().put(stream,
                        Base64.getEncoder().encodeToString(java.util.Arrays.copyOf(buf.array(), n)))));
            }
        } catch (NoSuchFileException gone) {
            // the sandbox was destroyed and its processes' files with it: nothing more to send
            sent[which] = stored;
        }
        return true;
    }

    private static ObjectNode event(String kind, ObjectNode value) {
        ObjectNode e = Json.object();
        e.putObject("event").set(kind, value);
        return e;
    }

    /** envd's end event: an exit's code, or a kill's signal as its status. */
    private static ObjectNode end(ExecResult r) {
        ObjectNode end = Json.object();
        if (r == null) {
            return end.put("exitCode", -1).put("exited", false).put("status", "unknown").put("error", "the process's end was not recorded");
        }
        boolean exited = r.endReason() == EndReason.EXITED;
        end.put("exitCode", r.exitCode()).put("exited", exited)
                .put("status", exited ? "exit status " + r.exitCode() : r.endReason().name().toLowerCase());
        if (!exited && r.message() != null) {
            end.put("error", r.message());
        }
        return end;
    }

    private static long keepAliveMillis(String header) {
        long seconds = DEFAULT_KEEPALIVE_SECONDS;
        if (header != null) {
            try {
                seconds = Long.parseLong(header.trim());
            } catch (NumberFormatException e) {
                throw AirlockException.invalid("Keepalive-Ping-Interval is a number of seconds");
            }
        }
        return Math.clamp(seconds, MIN_KEEPALIVE_SECONDS, MAX_KEEPALIVE_SECONDS) * 1000;
    }
}
