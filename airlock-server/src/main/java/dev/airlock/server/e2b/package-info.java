/**
 * The E2B door (docs/e2b.md): E2B's API, for E2B's SDKs and the frameworks built on them, on a
 * listener of its own. Like every door it only translates: the control plane's requests (E2B's
 * "E2B API") and the in-sandbox daemon's (envd: Connect RPC with the JSON codec, and its HTTP file
 * endpoints, answered by the server on the sandbox's behalf) become Airlock's commands, so every
 * control, quota, approval and audit record applies exactly as through REST and MCP. It holds no
 * sandbox state: a sandbox's envd access token is derived from the server's key, the client and
 * the sandbox id.
 */
package dev.airlock.server.e2b;
