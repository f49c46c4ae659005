/**
 * The MCP interface: Airlock's sandbox service offered to models as MCP tools, over stdio
 * ({@code airlock mcp}) and Streamable HTTP ({@code /mcp} on {@code airlock serve}), built on the
 * official MCP Java SDK. Like the REST API, it only translates: every call goes through the same
 * {@link dev.airlock.server.SandboxService}, so it holds no policy of its own.
 *
 * <p>What it adds that the SDK lacks: cancellation ({@code notifications/cancelled} kills the
 * running execution; the SDK ignores that notification, so {@link InboundMessages} observes it on
 * the raw inbound stream), and sandboxes that end with the MCP session that made them.
 */
package dev.airlock.server.mcp;
