/**
 * The sandboxes this server holds now, as the service, the controls and the features see them: a
 * {@link dev.airlock.server.live.ManagedSandbox} with its labels, times, slot and background
 * processes (and their terminals), the registry of them, the engines per tier, rates and the egress
 * log. Below the features and the controls: it uses the command API's views, policy, audit, output.
 */
package dev.airlock.server.live;
