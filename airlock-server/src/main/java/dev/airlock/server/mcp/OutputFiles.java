package dev.airlock.server.mcp;

import dev.airlock.core.AirlockException;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.core.SandboxAgent.FileType;
import dev.airlock.server.SandboxService;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.Content;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The files a one-shot program left in {@value #DIR}: images come back as image content, text files
 * as embedded text resources, each within {@link #MAX_FILE_BYTES} and at most {@link #MAX_FILES}
 * of them. Everything else is listed with the reason it was not returned.
 */
final class OutputFiles {

    static final String DIR = "/workspace/output";
    static final int MAX_FILES = 8;
    static final int MAX_FILE_BYTES = 1024 * 1024;
    private static final int MAX_SCANNED = 200;

    final List<Map<String, Object>> listing = new ArrayList<>();
    final List<Content> content = new ArrayList<>();

    static OutputFiles collect(SandboxService service, String sandboxId) {
        OutputFiles files = new OutputFiles();
        Deque<String> dirs = new ArrayDeque<>();
        dirs.add(DIR);
        int scanned = 0;
        while (!dirs.isEmpty() && scanned < MAX_SCANNED) {
            List<FileInfo> entries;
            try {
                entries = service.list(sandboxId, dirs.poll());
            } catch (AirlockException e) {
                continue; // the program removed the directory, or made it something else
            }
            for (FileInfo f : entries.stream().sorted((a, b) -> a.path().compareTo(b.path())).toList()) {
                if (++scanned > MAX_SCANNED) {
                    break;
                }
                if (f.type() == FileType.DIRECTORY) {
                    dirs.add(f.path());
                } else if (f.type() == FileType.FILE) {
                    files.add(service, sandboxId, f);
                }
            }
        }
        return files;
    }

    private void add(SandboxService service, String sandboxId, FileInfo f) {
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("path", f.path());
        entry.put("size", f.size());
        listing.add(entry);
        if (content.size() >= MAX_FILES) {
            entry.put("returnedAs", "not returned: only the first " + MAX_FILES + " files come back");
            return;
        }
        if (f.size() > MAX_FILE_BYTES) {
            entry.put("returnedAs", "not returned: larger than 1 MiB; use a long-lived sandbox (sandbox_create) and sandbox_read_file");
            return;
        }
        CappedSink bytes = new CappedSink(MAX_FILE_BYTES);
        try {
            service.readFile(sandboxId, f.path(), bytes);
        } catch (AirlockException e) {
            entry.put("returnedAs", "not returned: " + e.getMessage());
            return;
        }
        byte[] b = bytes.toByteArray();
        if (bytes.overflowed()) {
            entry.put("returnedAs", "not returned: it grew past 1 MiB while being read");
            return;
        }
        String image = FileContents.imageType(b);
        if (image != null) {
            content.add(new McpSchema.ImageContent(null, Base64.getEncoder().encodeToString(b), image));
            entry.put("returnedAs", "image " + image);
            return;
        }
        String text = FileContents.text(b);
        if (text != null) {
            content.add(new McpSchema.EmbeddedResource(null,
                    new McpSchema.TextResourceContents("file://" + f.path(), FileContents.textType(f.path()), text)));
            entry.put("returnedAs", "text resource");
            return;
        }
        entry.put("returnedAs", "not returned: binary and not a PNG, JPEG, GIF or WebP image");
    }
}
