package dev.airlock.server.e2b;

import dev.airlock.core.AirlockException;
import dev.airlock.core.SandboxSpec;
import dev.airlock.server.wire.Json;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * envd, E2B's in-sandbox daemon, answered by the server on the sandbox's behalf: nothing of it runs
 * in the sandbox. Processes ({@code process.Process}: Start and Connect stream a process's events,
 * List, SendSignal; SendInput, CloseStdin and Update for one started with its stdin open or on a
 * PTY) are the sandbox's background processes, whose output the stream follows from the files it
 * spills to; the file system ({@code filesystem.Filesystem}: Stat, ListDir, MakeDir,
 * Move, Remove) and {@code GET}/{@code POST /files} are Airlock's file commands. Relative paths and
 * a process's working directory start at the sandbox's home, {@value #HOME}, which is {@value
 * #WORKSPACE} under the name E2B's code expects (see {@link SandboxSpec#USER_HOME}).
 */
final class Envd {

    /**
     * The envd version whose API this implements, which the SDKs read to decide what to send: from
     * 0.4.0 on they name no user (envd's default is used), from 0.5.2 they close a command's stdin,
     * and they do not use what came after (octet-stream uploads, file metadata, watch options).
     */
    static final String VERSION = "0.5.2";
    /** The sandbox's home as E2B names it: where relative paths and commands start. */
    static final String HOME = SandboxSpec.USER_HOME;
    /** What {@link #HOME} is a link to in every image. */
    static final String WORKSPACE = "/workspace";

    void serve(E2bDoor.Call c, String sandbox) throws IOException {
        String path = c.path;
        String method = c.req.getMethod();
        if (path.equals("/files")) {
            switch (method) {
                case "GET" -> EnvdFiles.download(c, sandbox);
                case "POST" -> EnvdFiles.upload(c, sandbox);
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
            case "/process.Process/Start" -> EnvdProcesses.start(c, sandbox);
            case "/process.Process/Connect" -> EnvdProcesses.connect(c, sandbox);
            case "/process.Process/List" -> EnvdProcesses.list(c, sandbox);
            case "/process.Process/SendSignal" -> EnvdProcesses.signal(c, sandbox);
            case "/process.Process/SendInput" -> EnvdProcesses.input(c, sandbox);
            case "/process.Process/CloseStdin" -> EnvdProcesses.closeStdin(c, sandbox);
            case "/process.Process/Update" -> EnvdProcesses.update(c, sandbox);
            case "/filesystem.Filesystem/Stat" -> EnvdFiles.stat(c, sandbox);
            case "/filesystem.Filesystem/ListDir" -> EnvdFiles.listDir(c, sandbox);
            case "/filesystem.Filesystem/MakeDir" -> EnvdFiles.makeDir(c, sandbox);
            case "/filesystem.Filesystem/Move" -> EnvdFiles.move(c, sandbox);
            case "/filesystem.Filesystem/Remove" -> EnvdFiles.remove(c, sandbox);
            default -> {
                c.undecided();
                throw E2bDoor.unsupported("envd's " + Json.printable(path, 120) + " is not served by Airlock's E2B door: it serves"
                        + " process.Process Start, Connect, List, SendSignal, SendInput, CloseStdin and Update, and filesystem.Filesystem"
                        + " Stat, ListDir, MakeDir,"
                        + " Move and Remove (docs/e2b.md)");
            }
        }
    }

    // --- requests and answers, for the services ---

    /** A unary call's request message. */
    static JsonNode unary(E2bDoor.Call c) throws IOException {
        requireType(c, ConnectRpc.UNARY);
        return ConnectRpc.message(c.body());
    }

    /** A server stream's request message. */
    static JsonNode streamed(E2bDoor.Call c) throws IOException {
        requireType(c, ConnectRpc.STREAM);
        return ConnectRpc.message(ConnectRpc.unwrap(c.body()));
    }

    private static void requireType(E2bDoor.Call c, String type) {
        String sent = c.req.getContentType();
        if (sent == null || !sent.startsWith(type)) {
            throw AirlockException.invalid("this Connect call is sent as " + type + " (the JSON codec), not " + Json.printable(sent, 64));
        }
    }

    static void reply(E2bDoor.Call c, ObjectNode message) throws IOException {
        c.resp.setStatus(200);
        c.resp.setContentType(ConnectRpc.UNARY);
        c.resp.getOutputStream().write(message.toString().getBytes(StandardCharsets.UTF_8));
    }

    static String query(E2bDoor.Call c, String name) {
        String v = c.req.getParameter(name);
        if (v == null || v.isEmpty()) {
            throw AirlockException.invalid("the query parameter '" + name + "' names the file");
        }
        return v;
    }

    static String resolve(JsonNode m, String field) {
        String p = Json.string(m, field);
        if (p == null || p.isEmpty()) {
            throw AirlockException.invalid("'" + field + "' names a path");
        }
        return path(p);
    }

    /**
     * A path as Airlock's commands take it: relative ones (and {@code ~/...}) start at {@value #HOME},
     * and {@value #HOME} is named by what it links to, {@value #WORKSPACE} (the agent follows no link).
     */
    static String path(String p) {
        String absolute = p.equals("~") ? HOME : p.startsWith("~/") ? HOME + p.substring(1) : p.startsWith("/") ? p : HOME + "/" + p;
        return renamed(absolute, HOME, WORKSPACE);
    }

    /** A path as the SDK is shown it: under {@value #HOME}, never {@value #WORKSPACE}, the one directory's two names. */
    static String shown(String p) {
        return renamed(p, WORKSPACE, HOME);
    }

    private static String renamed(String p, String from, String to) {
        return p.equals(from) ? to : p.startsWith(from + "/") ? to + p.substring(from.length()) : p;
    }
}
