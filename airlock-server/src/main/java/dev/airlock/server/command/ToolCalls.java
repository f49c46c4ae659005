package dev.airlock.server.command;

import dev.airlock.server.policy.Client;

/**
 * The MCP door's tools, as the peer port runs the calls another node's MCP door sends on
 * ({@link NodeRouting#callTool}): authorized, recorded and carried out here as if this node's own
 * door had them.
 */
public interface ToolCalls {

    /**
     * Runs {@code call} ({@code name}, {@code arguments}, {@code session}: JSON), which node {@code
     * node}'s MCP door had, for {@code client}; the tool's result, as JSON.
     */
    byte[] call(Client client, String node, byte[] call);

    /** Node {@code node}'s MCP session {@code session} ended: the sandboxes made here for it are destroyed. */
    void sessionEnded(String node, String session);
}
