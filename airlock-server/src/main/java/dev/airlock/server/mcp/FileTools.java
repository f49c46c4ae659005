package dev.airlock.server.mcp;

import dev.airlock.core.AirlockException;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.server.command.Command;
import dev.airlock.server.output.CappedSink;
import dev.airlock.server.command.CommandApi;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.Content;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The MCP file tools ({@code sandbox_write_file}, {@code sandbox_read_file},
 * {@code sandbox_list_files}): each one command through {@link CommandApi}, bounded per call (what
 * a model can take in one answer); bigger work goes through {@code sandbox_exec}.
 */
final class FileTools {

    static final int MAX_WRITE_BYTES = 8 * 1024 * 1024;

    static final int MAX_READ_BYTES = 1024 * 1024;

    static final int MAX_LISTED = 1000;

    private final CommandApi service;

    FileTools(CommandApi service) {
        this.service = service;
    }

    CallToolResult writeFile(ToolCall call) {
        ToolArguments a = call.arguments(Set.of("sandboxId", "path", "content", "contentBase64"));
        String id = a.requiredString("sandboxId", "\"al-...\" (from sandbox_create)");
        String path = SandboxTools.resolve(a.requiredString("path", "\"data/input.csv\" (relative paths are under /workspace)"));
        String text = a.string("content");
        String base64 = a.string("contentBase64");
        if ((text == null) == (base64 == null)) {
            throw AirlockException.invalid("sandbox_write_file: give exactly one of 'content' (text) or 'contentBase64' (binary)");
        }
        byte[] bytes;
        try {
            bytes = text != null ? text.getBytes(StandardCharsets.UTF_8) : Base64.getDecoder().decode(base64);
        } catch (IllegalArgumentException e) {
            throw AirlockException.invalid("sandbox_write_file: 'contentBase64' is not valid base64");
        }
        if (bytes.length > MAX_WRITE_BYTES) {
            throw new AirlockException(AirlockException.Kind.TOO_LARGE, "sandbox_write_file: the content is " + bytes.length
                    + " bytes, over the limit of " + MAX_WRITE_BYTES + " per call: write it in parts and join them with sandbox_exec");
        }
        FileInfo f = service.execute(call.caller(), new Command.WriteFile(id, path, new ByteArrayInputStream(bytes)));
        return ToolResults.ok(file(f));
    }

    CallToolResult readFile(ToolCall call) {
        ToolArguments a = call.arguments(Set.of("sandboxId", "path"));
        String id = a.requiredString("sandboxId", "\"al-...\" (from sandbox_create)");
        String path = SandboxTools.resolve(a.requiredString("path", "\"/workspace/output/result.txt\""));
        FileInfo info = service.execute(call.caller(), new Command.Stat(id, path));
        if (info.type() != dev.airlock.core.SandboxAgent.FileType.FILE) {
            throw AirlockException.invalid("sandbox_read_file: " + path + " is a " + info.type().name().toLowerCase()
                    + ", not a regular file: list a directory with sandbox_list_files");
        }
        if (info.size() > MAX_READ_BYTES) {
            throw new AirlockException(AirlockException.Kind.TOO_LARGE, "sandbox_read_file: " + path + " is " + info.size()
                    + " bytes, over the limit of " + MAX_READ_BYTES + ": read a part with sandbox_exec (such as head -c 100000 "
                    + path + "), or summarize it with a program");
        }
        CappedSink sink = new CappedSink(MAX_READ_BYTES);
        service.execute(call.caller(), new Command.ReadFile(id, path, sink));
        if (sink.overflowed()) {
            throw new AirlockException(AirlockException.Kind.TOO_LARGE, "sandbox_read_file: " + path + " grew past "
                    + MAX_READ_BYTES + " bytes while being read: read a part with sandbox_exec");
        }
        byte[] b = sink.toByteArray();
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("path", path);
        s.put("size", b.length);
        List<Content> extra = new ArrayList<>();
        String text = FileContents.text(b);
        if (text != null) {
            s.put("encoding", "utf-8");
            s.put("content", text);
        } else {
            s.put("encoding", "base64");
            s.put("content", Base64.getEncoder().encodeToString(b));
            String image = FileContents.imageType(b);
            if (image != null) {
                extra.add(new McpSchema.ImageContent(null, (String) s.get("content"), image));
            }
        }
        CallToolResult r = ToolResults.ok(s);
        if (extra.isEmpty()) {
            return r;
        }
        List<Content> content = new ArrayList<>(r.content());
        content.addAll(extra);
        return CallToolResult.builder().content(content).structuredContent(s).isError(false).build();
    }

    CallToolResult listFiles(ToolCall call) {
        ToolArguments a = call.arguments(Set.of("sandboxId", "path"));
        String id = a.requiredString("sandboxId", "\"al-...\" (from sandbox_create)");
        String path = a.string("path") == null ? "/workspace" : SandboxTools.resolve(a.string("path"));
        List<FileInfo> entries = service.execute(call.caller(), new Command.ListFiles(id, path));
        List<Map<String, Object>> list = new ArrayList<>();
        entries.stream().sorted((x, y) -> x.path().compareTo(y.path())).limit(MAX_LISTED).forEach(f -> list.add(file(f)));
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("path", path);
        s.put("entries", list);
        s.put("truncated", entries.size() > MAX_LISTED);
        return ToolResults.ok(s);
    }

    static Map<String, Object> file(FileInfo f) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("path", f.path());
        m.put("type", f.type().name().toLowerCase());
        m.put("size", f.size());
        m.put("modifiedAt", Instant.ofEpochMilli(f.modifiedMillis()).toString());
        if (f.linkTarget() != null) {
            m.put("linkTarget", f.linkTarget());
        }
        return m;
    }
}
