/** The append-only, hash-chained audit log and its readers, pruning and refusal folding. Uses only policy (who acted). */
package dev.airlock.server.audit;
