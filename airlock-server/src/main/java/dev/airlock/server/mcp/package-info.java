/**
 * The MCP door: Airlock's sandbox service offered to models as MCP tools, over stdio
 * ({@code airlock mcp}) and Streamable HTTP ({@code /mcp} on {@code airlock serve}), built on the
 * official MCP Java SDK. Like the REST door, it only translates: every call goes through
 * {@link dev.airlock.server.command.CommandApi}, so it holds no policy of its own, and it may use
 * the command API, policy and the shared helpers only (ArchitectureTest).
 *
 * <p>What it adds that the SDK lacks: cancellation ({@code notifications/cancelled} kills the
 * running execution; the SDK ignores that notification, so {@link InboundMessages} observes it on
 * the raw inbound stream), and sandboxes that end with the MCP session that made them.
 */
package dev.airlock.server.mcp;
