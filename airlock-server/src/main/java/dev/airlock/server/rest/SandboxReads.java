package dev.airlock.server.rest;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Printable;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.SandboxView;
import dev.airlock.server.http.JsonViews;
import dev.airlock.server.wire.Json;
import dev.airlock.server.wire.NetworkJson;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static dev.airlock.server.policy.Operation.SANDBOX_READ;

/**
 * The reads of one sandbox: its description, its processes, its egress records; and all three in
 * one request ({@code GET /v1/sandboxes/{id}?include=processes,egress}), as a page that watches
 * the sandbox asks for them every second.
 */
final class SandboxReads {

    private static final String SANDBOX = "/v1/sandboxes/{id}";
    /** Egress records a sandbox's description includes with {@code include=egress}: the newest. */
    static final int EGRESS_INCLUDED = 100;
    private static final Set<String> INCLUDES = Set.of("processes", "egress");

    private SandboxReads() {
    }

    static List<RestRoute> routes() {
        return List.of(
                new RestRoute("GET", SANDBOX, SANDBOX_READ, SandboxReads::describe),
                new RestRoute("GET", SANDBOX + "/processes", SANDBOX_READ, c -> {
                    ObjectNode n = Json.object();
                    processes(n, c.execute(new Command.Describe(c.param("id"))));
                    c.send(200, n);
                }),
                new RestRoute("GET", SANDBOX + "/egress", SANDBOX_READ, c -> {
                    ObjectNode n = Json.object();
                    egress(n, "records", c, RestApi.limit(c.first("limit"), Command.Egress.KEPT, Command.Egress.KEPT));
                    c.send(200, n);
                }));
    }

    /**
     * A sandbox; with {@code include=processes}, {@code egress} or both (comma-separated), also its
     * processes and its newest {@value #EGRESS_INCLUDED} egress records.
     */
    private static void describe(RestCall c) throws IOException {
        Set<String> include = new HashSet<>();
        String asked = RestApi.blank(c.first("include"));
        for (String part : asked == null ? new String[0] : asked.split(",")) {
            if (!INCLUDES.contains(part.trim())) {
                throw AirlockException.invalid("query 'include' takes processes and egress, comma-separated, not '" + Printable.of(part, 40) + "'");
            }
            include.add(part.trim());
        }
        SandboxView s = c.execute(new Command.Describe(c.param("id")));
        ObjectNode n = JsonViews.sandbox(s, c.caller());
        if (include.contains("processes")) {
            processes(n, s);
        }
        if (include.contains("egress")) {
            egress(n, "egress", c, EGRESS_INCLUDED);
        }
        c.send(200, n);
    }

    private static void processes(ObjectNode n, SandboxView s) {
        ArrayNode list = n.putArray("processes");
        s.processes().forEach(p -> list.add(JsonViews.process(p, false)));
    }

    /** The newest {@code limit} egress records of the call's sandbox, oldest first, as {@code field}. */
    private static void egress(ObjectNode n, String field, RestCall c, int limit) {
        ArrayNode list = n.putArray(field);
        var records = c.execute(new Command.Egress(c.param("id")));
        records.subList(Math.max(0, records.size() - limit), records.size()).forEach(r -> list.add(NetworkJson.record(r)));
    }
}
