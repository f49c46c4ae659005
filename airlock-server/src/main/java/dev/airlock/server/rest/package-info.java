/**
 * The REST door ({@code /v1}, docs/rest-api.md): one routing table, bearer tokens or console
 * session cookies, NDJSON streams, the WebSocket upgrade of a terminal, and the preview-port proxy
 * with its capability links. It only translates HTTP into commands of
 * {@link dev.airlock.server.command.CommandApi}: it may use the command API, policy, the shared
 * helpers and an execution's output files, nothing else (ArchitectureTest).
 */
package dev.airlock.server.rest;
