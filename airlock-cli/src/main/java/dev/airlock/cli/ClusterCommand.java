package dev.airlock.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;

/**
 * {@code airlock cluster}: the nodes of the cluster a running server is one of (docs/cluster.md),
 * over its REST API (operations {@code cluster.read} and {@code cluster.drain}).
 */
@Command(name = "cluster", mixinStandardHelpOptions = true, description = "List the nodes of a cluster, drain one.",
        subcommands = {ClusterCommand.Nodes.class, ClusterCommand.Drain.class})
final class ClusterCommand {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Command(name = "nodes", mixinStandardHelpOptions = true, description = "List the cluster's nodes: state, address, tiers, sandboxes.")
    static final class Nodes implements Callable<Integer> {
        @Mixin
        ServerConnection connection = new ServerConnection();

        @Option(names = "--json", description = "Print the server's JSON.")
        boolean json;

        @Override
        public Integer call() {
            JsonNode nodes = connection.call("GET", "/v1/cluster/nodes", null).path("nodes");
            if (json) {
                System.out.println(nodes.toString());
                return 0;
            }
            System.out.printf("%-24s %-9s %-28s %-22s %s%n", "NODE", "STATE", "API", "TIERS", "SANDBOXES");
            for (JsonNode n : nodes) {
                System.out.printf("%-24s %-9s %-28s %-22s %d/%d%s%n", n.path("name").asString() + (n.path("self").asBoolean() ? " *" : ""),
                        n.path("state").asString(), n.path("apiAddress").asString(), String.join(",", n.path("tiers").valueStream()
                                .map(JsonNode::asString).toList()), n.path("sandboxes").asInt(), n.path("capacity").asInt(),
                        n.path("state").asString().equals("down") ? "  (silent " + Math.round(n.path("silentSeconds").asDouble()) + " s)" : "");
            }
            return 0;
        }
    }

    @Command(name = "drain", mixinStandardHelpOptions = true, description = "Stop placing sandboxes on a node (its sandboxes run on); --undo resumes.")
    static final class Drain implements Callable<Integer> {
        @Mixin
        ServerConnection connection = new ServerConnection();

        @Parameters(paramLabel = "NODE", description = "The node, as 'airlock cluster nodes' names it.")
        String node;

        @Option(names = "--undo", description = "Resume placements on the node.")
        boolean undo;

        @Override
        public Integer call() {
            JsonNode n = connection.call("POST", "/v1/cluster/nodes/" + URLEncoder.encode(node, StandardCharsets.UTF_8) + "/drain",
                    JSON.createObjectNode().put("draining", !undo));
            System.out.println(n.path("name").asString() + ": " + n.path("state").asString());
            return 0;
        }
    }
}
