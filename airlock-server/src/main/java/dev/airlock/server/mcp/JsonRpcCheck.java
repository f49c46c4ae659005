package dev.airlock.server.mcp;

import dev.airlock.core.Printable;
import io.modelcontextprotocol.spec.McpSchema;

import java.io.IOException;

/**
 * Reads a message the way the MCP SDK's HTTP transport will, before it does. The SDK answers a
 * message it cannot read (not JSON, nested too deep, a string it cannot decode) with its Java
 * exception serialized as the body, stack trace and class names included; here such a message is
 * refused with a JSON-RPC error that says what was wrong, and the SDK never sees it.
 */
final class JsonRpcCheck {

    private JsonRpcCheck() {
    }

    /** Null if the SDK can read {@code message}, else what to tell the client. */
    static String refusal(String message) {
        try {
            McpSchema.JSONRPCMessage m = McpSchema.deserializeJsonRpcMessage(McpServers.JSON, message);
            if (m instanceof McpSchema.JSONRPCRequest r && McpSchema.METHOD_TOOLS_CALL.equals(r.method())) {
                // The SDK would end such a call's stream without any answer.
                McpSchema.CallToolRequest call = r.params() == null ? null : McpServers.JSON.convertValue(r.params(), McpSchema.CallToolRequest.class);
                if (call == null || call.name() == null) {
                    return "tools/call needs \"params\": {\"name\": \"<tool>\", \"arguments\": {...}}: list the tools with tools/list";
                }
            }
            return null;
        } catch (IOException | RuntimeException e) {
            return "the request body is not a JSON-RPC 2.0 message this server can read (" + firstLine(rootCause(e).getMessage())
                    + "): send one JSON object with \"jsonrpc\": \"2.0\", a \"method\" and its \"params\"";
        }
    }

    private static Throwable rootCause(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }

    /** Jackson's messages quote the input and add a location on a new line: only the first line, printable. */
    private static String firstLine(String s) {
        return s == null ? "unreadable" : Printable.of(s.lines().findFirst().orElse(""), 160);
    }
}
