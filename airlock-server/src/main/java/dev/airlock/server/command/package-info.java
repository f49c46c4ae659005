/**
 * The command API: every request a client can make as one record of the sealed
 * {@link dev.airlock.server.command.Command} type, the views its answers carry (sandboxes,
 * processes, cells, metrics), and {@link dev.airlock.server.command.CommandApi}, the one thing a
 * door holds. Uses policy, wire and output only.
 */
package dev.airlock.server.command;
