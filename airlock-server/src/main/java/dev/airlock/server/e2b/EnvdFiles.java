package dev.airlock.server.e2b;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.server.command.Command;
import dev.airlock.server.policy.Operation;
import dev.airlock.server.wire.Json;
import jakarta.servlet.http.Part;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.InputStream;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * envd's file system ({@code filesystem.Filesystem}: Stat, ListDir, MakeDir, Move, Remove) and its
 * HTTP {@code GET}/{@code POST /files}, on Airlock's file commands.
 */
final class EnvdFiles {

    /** The most entries a ListDir answers, whatever its depth. */
    static final int MAX_ENTRIES = 10_000;

    private EnvdFiles() {
    }

    static void stat(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.FILES_READ);
        JsonNode m = Envd.unary(c);
        Envd.reply(c, Json.object().set("entry", entry(c.execute(new Command.Stat(sandbox, Envd.resolve(m, "path"))))));
    }

    static void move(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.FILES_WRITE);
        JsonNode m = Envd.unary(c);
        Envd.reply(c, Json.object().set("entry", entry(c.execute(new Command.Rename(sandbox, Envd.resolve(m, "source"),
                Envd.resolve(m, "destination"))))));
    }

    static void remove(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.FILES_WRITE);
        JsonNode m = Envd.unary(c);
        c.execute(new Command.Remove(sandbox, Envd.resolve(m, "path"), true));
        Envd.reply(c, Json.object());
    }

    static void listDir(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.FILES_READ);
        JsonNode m = Envd.unary(c);
        int depth = Math.max(1, m.path("depth").asInt(1));
        ArrayNode entries = Json.MAPPER.createArrayNode();
        List<String> level = List.of(Envd.resolve(m, "path"));
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
        Envd.reply(c, Json.object().set("entries", entries));
    }

    static void makeDir(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.FILES_WRITE);
        String dir = Envd.resolve(Envd.unary(c), "path");
        if (exists(c, sandbox, dir)) {
            throw ConnectRpc.alreadyExists(Envd.shown(dir) + " already exists");
        }
        Envd.reply(c, Json.object().set("entry", entry(c.execute(new Command.Mkdir(sandbox, dir, true)))));
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

    static void download(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.FILES_READ);
        String file = Envd.path(Envd.query(c, "path"));
        c.resp.setStatus(200);
        c.resp.setContentType("application/octet-stream");
        c.execute(new Command.ReadFile(sandbox, file, c.resp.getOutputStream()));
    }

    /** Writes each file of the body (multipart: each part's file name is its path, or the query's path), its parents made first. */
    static void upload(E2bDoor.Call c, String sandbox) throws IOException {
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
                        ? part.getSubmittedFileName() : Envd.query(c, "path");
                try (InputStream in = part.getInputStream()) {
                    written.add(uploaded(write(c, sandbox, Envd.path(target), in)));
                }
            }
        } else {
            try (InputStream in = c.req.getInputStream()) {
                written.add(uploaded(write(c, sandbox, Envd.path(Envd.query(c, "path")), in)));
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
        return Json.object().put("path", Envd.shown(f.path())).put("name", name(f.path()))
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
                .put("path", Envd.shown(f.path()))
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
}
