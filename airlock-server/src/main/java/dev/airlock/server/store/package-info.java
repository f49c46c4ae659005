/** The SQLite store of the sandboxes this server made, so that a restart reaps what a crash left. Uses nothing of the server. */
package dev.airlock.server.store;
