package dev.airlock.client;

import java.time.Instant;

/**
 * An interpreter context of a sandbox as the server describes it.
 *
 * @param state   {@code ready}, {@code busy} (running a cell) or {@code dead} (restart it)
 * @param cells   cells run since its kernel started
 * @param message why it is dead, or null
 */
public record InterpreterInfo(String id, String language, String state, Instant createdAt, int cells, String message) {
}
