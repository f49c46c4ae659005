/**
 * Snapshots: a sandbox's writable state, content-addressed and verified before a restore or fork,
 * with the read-only trees that restored workspaces lie on. Used by the service; never calls it back.
 */
package dev.airlock.server.snapshot;
