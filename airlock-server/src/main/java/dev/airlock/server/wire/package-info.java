/**
 * The JSON every layer reads and writes alike: strict field readers, the network policy and limit
 * forms that the REST API, MCP and the policy file share, and results made only of the engine's
 * types. Uses nothing of the server, so the policy and the command API can stand on it.
 */
package dev.airlock.server.wire;
