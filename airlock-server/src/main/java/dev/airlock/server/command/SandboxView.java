package dev.airlock.server.command;

import dev.airlock.core.Isolation;
import dev.airlock.core.IsolationDriver;
import dev.airlock.core.Language;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.PortConnection;
import dev.airlock.core.SandboxSpec;
import dev.airlock.server.policy.Profile;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * A sandbox as a command answers it: what a door may read and show. It gives no handle on the
 * sandbox itself, so a door can change a sandbox only through another command (and its controls).
 */
public interface SandboxView {

    String id();

    /** The client that created it. */
    String owner();

    /** The profile it was created with. */
    Profile profile();

    /** The tier of isolation it got. */
    Isolation isolation();

    /** The node of the cluster that holds it (docs/cluster.md); null on a server that runs alone. */
    String node();

    /** The language of {@code code} executions that name none; null when it has no default. */
    Language defaultLanguage();

    /** {@code running}, {@code paused} or {@code destroyed}. */
    String state();

    /** Whether it is paused to disk: its processes saved and stopped until it resumes. */
    default boolean pausedToDisk() {
        return false;
    }

    /** What it was created with: image, limits, environment, network. */
    SandboxSpec spec();

    /** The digest of its image's files, or null for the {@code system} image. */
    String imageDigest();

    /** Its network policy now (changed by {@link Command.UpdateNetwork}). */
    NetworkPolicy network();

    /** Its CPU time and memory now, or null where its tier cannot tell cheaply. */
    IsolationDriver.Usage usage();

    Map<String, String> labels();

    Instant createdAt();

    Instant expiresAt();

    Duration idleTimeout();

    Instant lastActivity();

    /** Its background processes, running and the most recent ended ones, oldest first. */
    List<? extends ProcessView> processes();

    /** One of its background processes; a NOT_FOUND error that says how to list them when there is none. */
    ProcessView process(String processId);

    /**
     * A TCP connection to {@code 127.0.0.1:port} inside it, through its agent: a preview port, once
     * {@link Command.OpenPort} allowed that port to this caller.
     */
    PortConnection connect(int port) throws IOException;
}
