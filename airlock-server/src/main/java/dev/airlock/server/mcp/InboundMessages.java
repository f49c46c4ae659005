package dev.airlock.server.mcp;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Looks at every JSON-RPC message a client sends, before the SDK does. The MCP Java SDK 2.1 has no
 * handler for {@code notifications/cancelled} and does not tell a tool which request id it serves;
 * so here each {@code tools/call} gets its call key written into {@code params._meta} (under a
 * name of ours, overwriting anything the client put there), and each cancellation interrupts the
 * call it names. Messages that are not valid JSON pass through untouched for the SDK to refuse.
 */
final class InboundMessages {

    /** Where the call key travels in {@code params._meta} of a tools/call. */
    static final String CALL_KEY = "dev.airlock/call";

    private static final Logger LOG = LoggerFactory.getLogger(InboundMessages.class);
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final RunningCalls calls;

    InboundMessages(RunningCalls calls) {
        this.calls = calls;
    }

    /** A message to hand to the SDK, and the key of the tools/call it is (null for any other message). */
    record Observed(String message, String callKey) {
    }

    /**
     * Observes one message of transport session {@code session}, and returns the message to hand to
     * the SDK (the same text unless it is a tools/call).
     */
    Observed observe(String session, String message) {
        JsonNode node;
        try {
            node = JSON.readTree(message);
        } catch (JacksonException e) {
            return new Observed(message, null);
        }
        if (node == null || !node.isObject() || session.isEmpty()) {
            // no session: nothing to cancel, and the SDK refuses a call without one
            return new Observed(message, null);
        }
        String method = node.path("method").asString("");
        if (method.equals("notifications/cancelled")) {
            JsonNode id = node.path("params").get("requestId");
            if (id != null && !id.isNull()) {
                LOG.debug("client cancelled a request of session {}", session);
                calls.cancel(key(session, id));
            }
            return new Observed(message, null);
        }
        if (method.equals("tools/call") && node.get("id") != null && node.get("params") instanceof ObjectNode params) {
            String key = key(session, node.get("id"));
            calls.accept(key);
            ObjectNode meta = params.get("_meta") instanceof ObjectNode m ? m : params.putObject("_meta");
            meta.put(CALL_KEY, key);
            return new Observed(JSON.writeValueAsString(node), key);
        }
        return new Observed(message, null);
    }

    /** The request that carried call {@code key} ended (answered, refused by the SDK, or cut): forget the call. */
    void requestEnded(String key) {
        if (key != null) {
            calls.end(key);
        }
    }

    private static String key(String session, JsonNode id) {
        // The id's JSON text tells the number 5 from the string "5", as JSON-RPC does.
        return RunningCalls.key(session, id.toString());
    }
}
