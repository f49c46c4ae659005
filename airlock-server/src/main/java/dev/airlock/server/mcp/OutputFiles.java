package dev.airlock.server.mcp;

import dev.airlock.server.command.Command;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.Content;

import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The files a one-shot run left in /workspace/output, as MCP content: images as image content,
 * text files as embedded text resources; every file is listed, with how it came back or why not.
 * (What is collected, and its bounds, is the service's: {@code OneShotRuns}.)
 */
final class OutputFiles {

    final List<Map<String, Object>> listing = new ArrayList<>();
    final List<Content> content = new ArrayList<>();

    static OutputFiles of(List<Command.RunOutput> outputs) {
        OutputFiles files = new OutputFiles();
        outputs.forEach(files::add);
        return files;
    }

    private void add(Command.RunOutput f) {
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("path", f.path());
        entry.put("size", f.size());
        listing.add(entry);
        byte[] b = f.content();
        if (b == null) {
            entry.put("returnedAs", f.notReturned());
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
