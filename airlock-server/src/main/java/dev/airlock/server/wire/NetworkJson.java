package dev.airlock.server.wire;

import dev.airlock.core.AirlockException;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.egress.EgressRecord;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The REST shape of a network policy and of egress records (docs/rest-api.md, "Network"). */
public final class NetworkJson {

    public static final Set<String> FIELDS = Set.of("allow", "deny", "ranges", "hosts", "maxConnections", "maxBytes");
    private static final Set<String> DESTINATION_FIELDS = Set.of("host", "ports");
    private static final int MAX_ENTRIES = 1000;

    private NetworkJson() {
    }

    /** Parses {@code network} (null or absent: no network). Every error names the field. */
    public static NetworkPolicy parse(JsonNode n) {
        if (n == null || n.isNull()) {
            return NetworkPolicy.NONE;
        }
        JsonNode body = Json.parseObject(n.toString().getBytes(StandardCharsets.UTF_8), FIELDS);
        List<Destination> allow = new ArrayList<>();
        for (JsonNode d : array(body, "allow")) {
            if (!d.isObject()) {
                throw AirlockException.invalid("network.allow entries must be objects such as {\"host\": \"pypi.org\", \"ports\": [443]}");
            }
            JsonNode dn = Json.parseObject(d.toString().getBytes(StandardCharsets.UTF_8), DESTINATION_FIELDS);
            String host = Json.string(dn, "host");
            List<Integer> ports = new ArrayList<>();
            for (JsonNode p : array(dn, "ports")) {
                if (!p.isIntegralNumber() || !p.canConvertToInt()) {
                    throw AirlockException.invalid("network.allow.ports must be whole numbers (1-65535)");
                }
                ports.add(p.asInt());
            }
            allow.add(new Destination(host, ports));
        }
        List<String> deny = strings(body, "deny");
        List<AddressRange> ranges = strings(body, "ranges").stream().map(AddressRange::new).toList();
        Map<String, List<String>> hosts = new LinkedHashMap<>();
        JsonNode h = body.get("hosts");
        if (h != null && !h.isNull()) {
            if (!h.isObject()) {
                throw AirlockException.invalid("network.hosts must be an object of name -> [addresses]");
            }
            for (Map.Entry<String, JsonNode> e : h.properties()) {
                List<String> addresses = new ArrayList<>();
                JsonNode v = e.getValue();
                if (v.isString()) {
                    addresses.add(v.asString());
                } else if (v.isArray()) {
                    v.forEach(a -> {
                        if (!a.isString()) {
                            throw AirlockException.invalid("network.hosts." + Json.printable(e.getKey()) + " must list addresses as strings");
                        }
                        addresses.add(a.asString());
                    });
                } else {
                    throw AirlockException.invalid("network.hosts." + Json.printable(e.getKey()) + " must be an address or a list of addresses");
                }
                hosts.put(e.getKey(), addresses);
            }
        }
        if (allow.size() + deny.size() + ranges.size() + hosts.size() > MAX_ENTRIES) {
            throw AirlockException.invalid("network: at most " + MAX_ENTRIES + " entries in all");
        }
        return new NetworkPolicy(allow, deny, ranges, hosts, (int) wholeNumber(body, "maxConnections", 100_000), wholeNumber(body, "maxBytes", Long.MAX_VALUE));
    }

    public static ObjectNode write(NetworkPolicy p) {
        ObjectNode n = Json.object();
        ArrayNode allow = n.putArray("allow");
        for (Destination d : p.allow()) {
            ObjectNode o = allow.addObject();
            o.put("host", d.host());
            ArrayNode ports = o.putArray("ports");
            d.ports().forEach(ports::add);
        }
        ArrayNode deny = n.putArray("deny");
        p.deny().forEach(deny::add);
        ArrayNode ranges = n.putArray("ranges");
        p.ranges().forEach(r -> ranges.add(r.cidr()));
        ObjectNode hosts = n.putObject("hosts");
        p.hosts().forEach((name, addresses) -> {
            ArrayNode a = hosts.putArray(name);
            addresses.forEach(a::add);
        });
        n.put("maxConnections", p.maxConnections());
        n.put("maxBytes", p.maxBytes());
        return n;
    }

    public static ObjectNode record(EgressRecord r) {
        ObjectNode n = Json.object();
        n.put("start", r.start().toString());
        n.put("protocol", r.protocol());
        n.put("destination", r.destination() == null ? null : Json.printable(r.destination()));
        n.put("port", r.port());
        n.put("address", r.address());
        n.put("allowed", r.allowed());
        n.put("rule", Json.printable(r.rule()));
        n.put("bytesUp", r.bytesUp());
        n.put("bytesDown", r.bytesDown());
        n.put("durationMs", r.duration().toMillis());
        // Names only: the values stay in the proxy.
        ArrayNode credentials = n.putArray("credentials");
        r.credentials().forEach(name -> credentials.add(Json.printable(name)));
        n.put("approval", r.approval());
        return n;
    }

    private static Iterable<JsonNode> array(JsonNode node, String field) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return List.of();
        }
        if (!v.isArray()) {
            throw AirlockException.invalid("network." + field + " must be an array");
        }
        if (v.size() > MAX_ENTRIES) {
            throw AirlockException.invalid("network." + field + ": at most " + MAX_ENTRIES + " entries");
        }
        return v;
    }

    private static List<String> strings(JsonNode node, String field) {
        List<String> out = new ArrayList<>();
        for (JsonNode s : array(node, field)) {
            if (!s.isString()) {
                throw AirlockException.invalid("network." + field + " must be an array of strings");
            }
            out.add(s.asString());
        }
        return out;
    }

    private static long wholeNumber(JsonNode node, String field, long max) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return 0;
        }
        if (!v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < 0 || v.asLong() > max) {
            throw AirlockException.invalid("network." + field + " must be a whole number from 0 to " + max + " (0: the default)");
        }
        return v.asLong();
    }
}
