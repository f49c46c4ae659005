package dev.airlock.server.mcp;

import io.modelcontextprotocol.server.McpAsyncServerExchange;
import io.modelcontextprotocol.spec.McpSchema;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Map;
import java.util.Set;

/**
 * One tool call as a handler sees it: its arguments, its session, and the notifications it may send
 * back while it runs. Notifications are best effort: a client that went away or a call that was
 * cancelled must not turn into an error of the call itself.
 */
final class ToolCall {

    private static final Logger LOG = LoggerFactory.getLogger(ToolCall.class);
    private static final Duration SEND_TIMEOUT = Duration.ofSeconds(10);

    private final McpAsyncServerExchange exchange;
    private final McpSchema.CallToolRequest request;

    ToolCall(McpAsyncServerExchange exchange, McpSchema.CallToolRequest request) {
        this.exchange = exchange;
        this.request = request;
    }

    String tool() {
        return request.name();
    }

    ToolArguments arguments(Set<String> allowed) {
        return new ToolArguments(request.name(), request.arguments(), allowed);
    }

    /** The arguments as sent, for the audit digest. */
    Map<String, Object> rawArguments() {
        return request.arguments();
    }

    /** The MCP session this call came in. */
    String session() {
        return exchange.sessionId();
    }

    /** The key under which a cancellation of this call arrives, or null if none is known. */
    String callKey() {
        Map<String, Object> meta = request.meta();
        return meta != null && meta.get(InboundMessages.CALL_KEY) instanceof String key ? key : null;
    }

    private Object progressToken() {
        Map<String, Object> meta = request.meta();
        return meta == null ? null : meta.get("progressToken");
    }

    void log(String logger, String text) {
        try {
            exchange.loggingNotification(new McpSchema.LoggingMessageNotification(McpSchema.LoggingLevel.INFO, logger, text))
                    .block(SEND_TIMEOUT);
        } catch (RuntimeException e) {
            LOG.debug("could not send output to the client: {}", e.toString());
        }
    }

    void progress(double progress, Double total, String message) {
        Object token = progressToken();
        if (token == null) {
            return;
        }
        try {
            exchange.progressNotification(new McpSchema.ProgressNotification(token, progress, total, message)).block(SEND_TIMEOUT);
        } catch (RuntimeException e) {
            LOG.debug("could not send progress to the client: {}", e.toString());
        }
    }
}
