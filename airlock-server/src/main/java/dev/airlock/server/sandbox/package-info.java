/**
 * The sandbox service: {@link dev.airlock.server.sandbox.SandboxService} implements the command API,
 * runs every command through the chain of controls and hands it to the handler of its concern:
 * lifecycle (create, pause, fork, snapshot, destroy), executions, one-shot runs, teardown, expiry,
 * metrics, egress approvals. It uses the features, the controls and what they stand on; no door.
 */
package dev.airlock.server.sandbox;
