/**
 * The controls around every command, as one chain ({@link dev.airlock.server.control.ControlChain}):
 * grant, profile ceilings, quotas, capacity, approval, separation of duties; and the pending
 * approvals. A refusal names its control and rule. Uses the command API, live sandboxes, policy, audit.
 */
package dev.airlock.server.control;
