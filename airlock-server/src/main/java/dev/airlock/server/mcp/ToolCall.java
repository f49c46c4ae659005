package dev.airlock.server.mcp;

import dev.airlock.server.policy.Caller;
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

    /** The MCP session's exchange; null for a call another node's MCP door sent on (no notifications go back then). */
    private final McpAsyncServerExchange exchange;
    private final McpSchema.CallToolRequest request;
    private final String session;
    /** Set once the service authorized the call. */
    private Caller caller;

    ToolCall(McpAsyncServerExchange exchange, McpSchema.CallToolRequest request) {
        this.exchange = exchange;
        this.request = request;
        this.session = exchange.sessionId();
    }

    /** A call another node's MCP door had in {@code session} ({@code <node>/<session>}) and sent on. */
    ToolCall(McpSchema.CallToolRequest request, String session) {
        this.exchange = null;
        this.request = request;
        this.session = session;
    }

    /** The caller the service authorized this call as; its commands are executed as it. */
    Caller caller() {
        if (caller == null) {
            throw new IllegalStateException("tool call " + tool() + " was not authorized");
        }
        return caller;
    }

    void authorizedAs(Caller authorized) {
        this.caller = authorized;
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

    /** Whether another node's MCP door had this call and sent it on. */
    boolean forwarded() {
        return exchange == null;
    }

    /** The MCP session this call came in. */
    String session() {
        return session;
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

    /**
     * How to ask this call's user to approve an action through MCP elicitation (a form with one
     * yes/no field), or null when the client does not support elicitation. Accept with "yes"
     * approves; accept with "no" or decline denies; cancel, or no answer, leaves it undecided.
     */
    Caller.Asker elicitation() {
        McpSchema.ClientCapabilities caps = exchange == null ? null : exchange.getClientCapabilities();
        if (caps == null || caps.elicitation() == null) {
            return null;
        }
        return (question, timeout) -> {
            McpSchema.ElicitRequest ask = McpSchema.ElicitRequest.builder()
                    .message(question)
                    .requestedSchema(Map.of("type", "object",
                            "properties", Map.of("approve", Map.of("type", "boolean", "title", "Approve",
                                    "description", "true to let it go ahead, false to refuse it")),
                            "required", java.util.List.of("approve")))
                    .build();
            McpSchema.ElicitResult answer = exchange.createElicitation(ask).block(timeout);
            if (answer == null || answer.action() == McpSchema.ElicitResult.Action.CANCEL) {
                return java.util.Optional.empty();
            }
            boolean yes = answer.action() == McpSchema.ElicitResult.Action.ACCEPT && answer.content() != null
                    && Boolean.TRUE.equals(answer.content().get("approve"));
            return java.util.Optional.of(yes);
        };
    }

    void log(String logger, String text) {
        if (exchange == null) {
            return;
        }
        try {
            exchange.loggingNotification(new McpSchema.LoggingMessageNotification(McpSchema.LoggingLevel.INFO, logger, text))
                    .block(SEND_TIMEOUT);
        } catch (RuntimeException e) {
            LOG.debug("could not send output to the client: {}", e.toString());
        }
    }

    void progress(double progress, Double total, String message) {
        Object token = progressToken();
        if (token == null || exchange == null) {
            return;
        }
        try {
            exchange.progressNotification(new McpSchema.ProgressNotification(token, progress, total, message)).block(SEND_TIMEOUT);
        } catch (RuntimeException e) {
            LOG.debug("could not send progress to the client: {}", e.toString());
        }
    }
}
