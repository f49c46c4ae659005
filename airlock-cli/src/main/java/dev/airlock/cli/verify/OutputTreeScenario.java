package dev.airlock.cli.verify;

import dev.airlock.cli.verify.Verifier.Outcome;
import dev.airlock.core.Printable;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ServerConfig;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The output-tree scenario: a real server, in this JVM, on the scenario's own state and data
 * directories and a free loopback port, holds a sandbox whose code leaves four times the output
 * collection's entry bound in directories under /workspace/output, and keeps a process running.
 * When its lifetime runs out, its processes must be dead within {@link #MARGIN}, the collection must
 * stop at its bound, and nothing of the sandbox may remain.
 */
final class OutputTreeScenario {

    /** From the end of the sandbox's lifetime to its processes being dead: the expiry loop ticks every 0.5 s. */
    static final Duration MARGIN = Duration.ofSeconds(3);
    /** The server's bound on collecting one sandbox's outputs (its OutputStore.DEADLINE). */
    private static final Duration COLLECTION_DEADLINE = Duration.ofSeconds(10);
    private static final Duration TTL = Duration.ofSeconds(20);
    private static final int DIRECTORIES = 40_000;
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private OutputTreeScenario() {
    }

    static Outcome run(VerifyTarget target) throws IOException, InterruptedException {
        Path data = target.stateDir().resolveSibling("d");
        Files.createDirectories(data);
        Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwx------"));
        List<String> problems = new ArrayList<>();
        StringBuilder happened = new StringBuilder();
        String id;
        try (AirlockServer server = AirlockServer.start(ServerConfig.defaults().withPort(0).withDataDir(data).withDriver(target.settings())
                .withPoolSize(0)); HttpClient http = HttpClient.newHttpClient()) {
            ScenarioRest rest = new ScenarioRest(http, server);
            // code under software emulation takes the tier's time scale longer to make the tree
            Duration ttl = TTL.multipliedBy(target.timeScale());
            JsonNode created = rest.call("POST", "/v1/sandboxes", "{\"ttlSeconds\": " + ttl.toSeconds() + "}", 201);
            id = created.path("id").asString();
            attack(rest, id, ttl, Instant.parse(created.path("expiresAt").asString()), happened, problems, target);
        }
        problems.addAll(target.leftovers(id));
        return RecoveryChecks.verdict(happened.toString(), problems);
    }

    private static void attack(ScenarioRest rest, String id, Duration ttl, Instant expires, StringBuilder happened, List<String> problems,
                               VerifyTarget target)
            throws IOException, InterruptedException {
        // One process makes them all: under gVisor every fork costs a Sentry task, and 400 of them took over 15 s.
        JsonNode made = rest.call("POST", "/v1/sandboxes/" + id + "/exec", "{\"command\": [\"python3\", \"-c\", \"import os\\n"
                + "for i in range(200):\\n    for j in range(200):\\n        os.makedirs(f'/workspace/output/t{i}/{j}')\"], \"timeoutSeconds\": "
                + ttl.minusSeconds(5).toSeconds() + "}", 200);
        if (made.path("exitCode").asInt(-1) != 0) {
            throw new IOException("could not make the tree of directories: " + Printable.quoted(made.toString(), Findings.SHOWN_CHARS));
        }
        rest.call("POST", "/v1/sandboxes/" + id + "/exec", "{\"command\": [\"sleep\", \"1000\"], \"timeoutSeconds\": 600,"
                + " \"background\": true}", 202);
        if (!HostProcesses.eventually(10_000, () -> !codeProcesses(target, id).isEmpty())) {
            throw new IOException("no process of sandbox " + id + " was seen on the host, so the check would prove nothing");
        }
        happened.append("left ").append(DIRECTORIES).append(" directories in /workspace/output and a running sleep");
        // The host sees gVisor's tasks or a guest's processes only through their kernel's host processes, which live on
        // while the outputs are collected.
        boolean ownKernel = target.tier().ownKernel();
        Duration margin = ownKernel ? MARGIN.plus(COLLECTION_DEADLINE) : MARGIN;
        String whose = ownKernel ? "the host processes of " + target.tier().kernel() + " (which runs its processes)" : "its processes";
        long waitMillis = Math.max(0, Duration.between(Instant.now(), expires.plus(margin)).toMillis());
        if (HostProcesses.eventually(waitMillis, () -> codeProcesses(target, id).isEmpty())) {
            happened.append("; ").append(whose).append(" were dead within ").append(margin.toSeconds()).append(" s of its lifetime's end");
        } else {
            problems.add(whose + " of the expired sandbox still ran " + margin.toSeconds() + " s after its lifetime ended: "
                    + HostProcesses.describe(codeProcesses(target, id)));
        }
        if (!HostProcesses.eventually(60_000, () -> target.leftovers(id).isEmpty())) {
            problems.add("the expired sandbox was not gone 60 s after its lifetime ended: " + target.leftovers(id));
        }
        JsonNode manifest = rest.outputs(id);
        String cut = manifest == null ? "" : manifest.path("cut").toString();
        happened.append("; the collection looked at ").append(manifest == null ? 0 : manifest.path("entries").asInt())
                .append(" entries, cut: ").append(manifest == null ? "no manifest" : cut);
        // Under gVisor a walk costs about 1 ms an entry (each system call is served by the Sentry), so the time bound may come first.
        if (!cut.contains("entries: the walk stopped at") && !cut.contains("deadline: the walk of")) {
            problems.add("the collection of the sandbox's outputs was not cut at its entry bound or its time bound");
        }
    }

    /**
     * The sandbox's processes on the host other than its agent; under gVisor or in a guest, the host
     * processes of the kernel that runs them (the host cannot tell the code's processes apart).
     */
    private static List<HostProcesses.HostProcess> codeProcesses(VerifyTarget target, String id) {
        if (target.tier().ownKernel()) {
            return HostProcesses.inSandboxes(target, id);
        }
        return HostProcesses.inSandboxes(target, id).stream().filter(p -> !p.cmdline().startsWith("/.airlock/airlock-agent")).toList();
    }
}
