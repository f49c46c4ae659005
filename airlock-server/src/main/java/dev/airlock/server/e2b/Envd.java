package dev.airlock.server.e2b;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.EndReason;
import dev.airlock.core.ExecResult;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.ExecSource;
import dev.airlock.server.command.ProcessView;
import dev.airlock.server.policy.Operation;
import dev.airlock.server.wire.Json;
import jakarta.servlet.http.Part;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * envd, E2B's in-sandbox daemon, answered by the server on the sandbox's behalf: nothing of it runs
 * in the sandbox. Processes ({@code process.Process}: Start and Connect stream a process's events,
 * List, SendSignal) are the sandbox's background processes, whose output the stream follows from
 * the files it spills to; the file system ({@code filesystem.Filesystem}: Stat, ListDir, MakeDir,
 * Move, Remove) and {@code GET}/{@code POST /files} are Airlock's file commands. Relative paths and
 * a process's working directory start at the sandbox's home, {@value #HOME}.
 */
final class Envd {

    /**
     * The envd version whose API this implements, which the SDKs read to decide what to send: from
     * 0.4.0 on they name no user (envd's default is used), and they do not use what came after
     * (closing stdin, octet-stream uploads, file metadata).
     */
    static final String VERSION = "0.4.0";
    /** The sandbox's home: where relative paths and commands start. */
    static final String HOME = "/workspace";
    /** The most bytes of output one data event carries. */
    static final int CHUNK = 64 * 1024;
    /** The most entries a ListDir answers, whatever its depth. */
    static final int MAX_ENTRIES = 10_000;
    /** How often a followed process is looked at while it prints nothing, at most. */
    private static final long MAX_POLL_MILLIS = 200;
    /**
     * Keep-alive interval when the client asks for none, and the bounds of the one it asks for: at
     * most 20 s, since a connection silent for 30 s is closed (ConnectionGuard).
     */
    private static final long DEFAULT_KEEPALIVE_SECONDS = 20, MIN_KEEPALIVE_SECONDS = 1, MAX_KEEPALIVE_SECONDS = 20;

    void serve(E2bDoor.Call c, String sandbox) throws IOException {
        String path = c.req.getRequestURI();
        String method = c.req.getMethod();
        if (path.equals("/files")) {
            switch (method) {
                case "GET" -> download(c, sandbox);
                case "POST" -> upload(c, sandbox);
                default -> {
                    c.undecided();
                    throw E2bDoor.unsupported("/files is read with GET and written with POST");
                }
            }
            return;
        }
        if (!method.equals("POST")) {
            c.undecided();
            throw E2bDoor.unsupported("envd's " + Json.printable(path, 120) + " is not served by Airlock's E2B door (it serves /health,"
                    + " /files and the process and filesystem services)");
        }
        switch (path) {
            case "/process.Process/Start" -> start(c, sandbox);
            case "/process.Process/Connect" -> connect(c, sandbox);
            case "/process.Process/List" -> list(c, sandbox);
            case "/process.Process/SendSignal" -> signal(c, sandbox);
            case "/filesystem.Filesystem/Stat" -> {
                c.authorize(Operation.FILES_READ);
                JsonNode m = unary(c);
                reply(c, Json.object().set("entry", entry(c.execute(new Command.Stat(sandbox, resolve(m, "path"))))));
            }
            case "/filesystem.Filesystem/ListDir" -> listDir(c, sandbox);
            case "/filesystem.Filesystem/MakeDir" -> makeDir(c, sandbox);
            case "/filesystem.Filesystem/Move" -> {
                c.authorize(Operation.FILES_WRITE);
                JsonNode m = unary(c);
                reply(c, Json.object().set("entry", entry(c.execute(new Command.Rename(sandbox, resolve(m, "source"), resolve(m, "destination"))))));
            }
            case "/filesystem.Filesystem/Remove" -> {
                c.authorize(Operation.FILES_WRITE);
                JsonNode m = unary(c);
                c.execute(new Command.Remove(sandbox, resolve(m, "path"), true));
                reply(c, Json.object());
            }
            default -> {
                c.undecided();
                throw E2bDoor.unsupported("envd's " + Json.printable(path, 120) + " is not served by Airlock's E2B door: it serves"
                        + " process.Process Start, Connect, List and SendSignal, and filesystem.Filesystem Stat, ListDir, MakeDir,"
                        + " Move and Remove (docs/e2b.md)");
            }
        }
    }

    // --- processes ---

    private void start(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.EXEC);
        JsonNode m = streamed(c);
        if (m.has("pty") && !m.get("pty").isNull()) {
            throw E2bDoor.unsupported("a PTY (Sandbox.pty) is not served by Airlock's E2B door yet: open a terminal with Airlock's"
                    + " REST API (POST /v1/sandboxes/{id}/exec with \"tty\": true, then its attach WebSocket)");
        }
        JsonNode process = m.path("process");
        String cmd = text(process, "cmd");
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
        env.putIfAbsent("HOME", HOME);
        String cwd = text(process, "cwd");
        Command.ExecOptions options = new Command.ExecOptions(env, cwd == null || cwd.isEmpty() ? HOME : path(cwd), null, null);
        ProcessView p = c.execute(new Command.StartProcess(sandbox, new ExecSource.Command(argv), options));
        follow(c, p);
    }

    private void connect(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.SANDBOX_READ);
        JsonNode m = streamed(c);
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

    private void list(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.SANDBOX_READ);
        unary(c);
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
        reply(c, Json.object().set("processes", processes));
    }

    private void signal(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.EXEC);
        JsonNode m = unary(c);
        JsonNode s = m.path("signal");
        int signal = switch (s.isNumber() ? Integer.toString(s.asInt()) : s.asString("")) {
            case "SIGNAL_SIGKILL", "9" -> 9;
            case "SIGNAL_SIGTERM", "15" -> 15;
            default -> throw AirlockException.invalid("'signal' is SIGNAL_SIGKILL or SIGNAL_SIGTERM");
        };
        c.execute(new Command.Signal(sandbox, process(c, sandbox, m).id(), signal));
        reply(c, Json.object());
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
                boolean moved = copy(out, p.output().stdoutFile(), p.output().stdoutBytes(), sent, 0, "stdout")
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

    // --- the file system ---

    private void listDir(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.FILES_READ);
        JsonNode m = unary(c);
        int depth = Math.max(1, m.path("depth").asInt(1));
        ArrayNode entries = Json.MAPPER.createArrayNode();
        List<String> level = List.of(resolve(m, "path"));
        for (int d = 0; d < depth && !level.isEmpty(); d++) {
            List<String> next = new ArrayList<>();
            for (String dir : level) {
                for (FileInfo f : c.execute(new Command.ListFiles(sandbox, dir))) {
                    if (entries.size() == MAX_ENTRIES) {
                        throw new AirlockException(Kind.TOO_LARGE, "the listing has more than " + MAX_ENTRIES
                                + " entries: list a smaller depth or a directory further down");
                    }
                    entries.add(entry(f));
                    if (f.type() == dev.airlock.core.SandboxAgent.FileType.DIRECTORY) {
                        next.add(f.path());
                    }
                }
            }
            level = next;
        }
        reply(c, Json.object().set("entries", entries));
    }

    private void makeDir(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.FILES_WRITE);
        String dir = resolve(unary(c), "path");
        if (exists(c, sandbox, dir)) {
            throw ConnectRpc.alreadyExists(dir + " already exists");
        }
        reply(c, Json.object().set("entry", entry(c.execute(new Command.Mkdir(sandbox, dir, true)))));
    }

    private static boolean exists(E2bDoor.Call c, String sandbox, String path) {
        try {
            c.execute(new Command.Stat(sandbox, path));
            return true;
        } catch (AirlockException e) {
            if (e.kind() == Kind.NOT_FOUND) {
                return false;
            }
            throw e;
        }
    }

    private void download(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.FILES_READ);
        String file = path(query(c, "path"));
        c.resp.setStatus(200);
        c.resp.setContentType("application/octet-stream");
        c.execute(new Command.ReadFile(sandbox, file, c.resp.getOutputStream()));
    }

    /** Writes each file of the body (multipart: each part's file name is its path, or the query's path), its parents made first. */
    private void upload(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.FILES_WRITE);
        String type = c.req.getContentType() == null ? "" : c.req.getContentType();
        ArrayNode written = Json.MAPPER.createArrayNode();
        if (type.startsWith("multipart/form-data")) {
            java.util.Collection<Part> parts;
            try {
                parts = c.req.getParts();
            } catch (jakarta.servlet.ServletException | IllegalStateException e) {
                throw AirlockException.invalid("the upload is not a readable multipart body: " + Json.printable(e.getMessage()));
            }
            for (Part part : parts) {
                String target = part.getSubmittedFileName() != null && !part.getSubmittedFileName().isEmpty()
                        ? part.getSubmittedFileName() : query(c, "path");
                try (InputStream in = part.getInputStream()) {
                    written.add(uploaded(write(c, sandbox, path(target), in)));
                }
            }
        } else {
            try (InputStream in = c.req.getInputStream()) {
                written.add(uploaded(write(c, sandbox, path(query(c, "path")), in)));
            }
        }
        c.send(200, written);
    }

    private static FileInfo write(E2bDoor.Call c, String sandbox, String file, InputStream content) {
        int slash = file.lastIndexOf('/');
        String parent = slash <= 0 ? "/" : file.substring(0, slash);
        if (!exists(c, sandbox, parent)) {
            c.execute(new Command.Mkdir(sandbox, parent, true));
        }
        return c.execute(new Command.WriteFile(sandbox, file, content));
    }

    private static ObjectNode uploaded(FileInfo f) {
        return Json.object().put("path", f.path()).put("name", name(f.path()))
                .put("type", f.type() == dev.airlock.core.SandboxAgent.FileType.DIRECTORY ? "directory" : "file");
    }

    /** envd's EntryInfo of a file. */
    private static ObjectNode entry(FileInfo f) {
        ObjectNode e = Json.object()
                .put("name", name(f.path()))
                .put("type", switch (f.type()) {
                    case FILE -> "FILE_TYPE_FILE";
                    case DIRECTORY -> "FILE_TYPE_DIRECTORY";
                    case SYMLINK -> "FILE_TYPE_SYMLINK";
                    case OTHER -> "FILE_TYPE_UNSPECIFIED";
                })
                .put("path", f.path())
                .put("size", Long.toString(f.size()))
                .put("mode", f.mode() & 07777)
                .put("permissions", permissions(f))
                .put("modifiedTime", Instant.ofEpochMilli(f.modifiedMillis()).toString());
        if (f.linkTarget() != null) {
            e.put("symlinkTarget", f.linkTarget());
        }
        return e;
    }

    private static String permissions(FileInfo f) {
        StringBuilder b = new StringBuilder(f.type() == dev.airlock.core.SandboxAgent.FileType.DIRECTORY ? "d"
                : f.type() == dev.airlock.core.SandboxAgent.FileType.SYMLINK ? "l" : "-");
        String rwx = "rwxrwxrwx";
        for (int i = 0; i < 9; i++) {
            b.append((f.mode() & (1 << (8 - i))) != 0 ? rwx.charAt(i) : '-');
        }
        return b.toString();
    }

    private static String name(String path) {
        int slash = path.lastIndexOf('/');
        return slash < 0 ? path : path.substring(slash + 1);
    }

    // --- requests and answers ---

    /** A unary call's request message. */
    private static JsonNode unary(E2bDoor.Call c) throws IOException {
        requireType(c, ConnectRpc.UNARY);
        return ConnectRpc.message(c.body());
    }

    /** A server stream's request message. */
    private static JsonNode streamed(E2bDoor.Call c) throws IOException {
        requireType(c, ConnectRpc.STREAM);
        return ConnectRpc.message(ConnectRpc.unwrap(c.body()));
    }

    private static void requireType(E2bDoor.Call c, String type) {
        String sent = c.req.getContentType();
        if (sent == null || !sent.startsWith(type)) {
            throw AirlockException.invalid("this Connect call is sent as " + type + " (the JSON codec), not " + Json.printable(sent, 64));
        }
    }

    private static void reply(E2bDoor.Call c, ObjectNode message) throws IOException {
        c.resp.setStatus(200);
        c.resp.setContentType(ConnectRpc.UNARY);
        c.resp.getOutputStream().write(message.toString().getBytes(StandardCharsets.UTF_8));
    }

    private static String text(JsonNode node, String field) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isString()) {
            throw AirlockException.invalid("'" + field + "' is a string");
        }
        return v.asString();
    }

    private static String query(E2bDoor.Call c, String name) {
        String v = c.req.getParameter(name);
        if (v == null || v.isEmpty()) {
            throw AirlockException.invalid("the query parameter '" + name + "' names the file");
        }
        return v;
    }

    private static String resolve(JsonNode m, String field) {
        String p = text(m, field);
        if (p == null || p.isEmpty()) {
            throw AirlockException.invalid("'" + field + "' names a path");
        }
        return path(p);
    }

    /** A path as the sandbox sees it: relative ones (and {@code ~/...}) start at {@value #HOME}. */
    static String path(String p) {
        if (p.equals("~")) {
            return HOME;
        }
        if (p.startsWith("~/")) {
            return HOME + p.substring(1);
        }
        return p.startsWith("/") ? p : HOME + "/" + p;
    }
}
