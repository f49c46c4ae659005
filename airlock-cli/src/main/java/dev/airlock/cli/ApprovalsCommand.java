package dev.airlock.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

import java.util.concurrent.Callable;

/**
 * {@code airlock approvals}: the operator's side of the approval gate, over the running server's
 * REST API (the client's policy must grant {@code approvals}).
 */
@Command(name = "approvals", mixinStandardHelpOptions = true, description = "List, approve or deny actions waiting for a person.",
        subcommands = {ApprovalsCommand.ListPending.class, ApprovalsCommand.Approve.class, ApprovalsCommand.Deny.class})
final class ApprovalsCommand {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List pending approvals, oldest first.")
    static final class ListPending implements Callable<Integer> {
        @picocli.CommandLine.Mixin
        ServerConnection connection = new ServerConnection();

        @Option(names = "--json", description = "Print the server's JSON.")
        boolean json;

        @Override
        public Integer call() {
            JsonNode list = connection.call("GET", "/v1/approvals", null).path("approvals");
            if (json) {
                System.out.println(list.toString());
                return 0;
            }
            if (list.isEmpty()) {
                System.out.println("no approval is pending");
            }
            for (JsonNode a : list) {
                System.out.println(a.path("id").asString() + "  client " + a.path("client").asString() + "  until "
                        + a.path("deadline").asString() + "\n    " + a.path("summary").asString() + "\n    rule " + a.path("rule").asString());
            }
            return 0;
        }
    }

    abstract static class Decide implements Callable<Integer> {
        @picocli.CommandLine.Mixin
        ServerConnection connection = new ServerConnection();

        @Parameters(paramLabel = "ID", description = "The approval, from 'airlock approvals list'.")
        String id;

        @Option(names = "--reason", paramLabel = "TEXT", description = "Why, for the audit log.")
        String reason;

        abstract String verb();

        @Override
        public Integer call() {
            ObjectNode body = JSON.createObjectNode();
            body.put("by", "cli:" + System.getProperty("user.name"));
            if (reason != null) {
                body.put("reason", reason);
            }
            JsonNode a = connection.call("POST", "/v1/approvals/" + java.net.URLEncoder.encode(id, java.nio.charset.StandardCharsets.UTF_8)
                    + "/" + verb(), body);
            System.out.println(a.path("id").asString() + ": " + a.path("state").asString() + " by " + a.path("decidedBy").asString());
            return 0;
        }
    }

    @Command(name = "approve", mixinStandardHelpOptions = true, description = "Let a pending action go ahead.")
    static final class Approve extends Decide {
        @Override
        String verb() {
            return "approve";
        }
    }

    @Command(name = "deny", mixinStandardHelpOptions = true, description = "Refuse a pending action.")
    static final class Deny extends Decide {
        @Override
        String verb() {
            return "deny";
        }
    }
}
