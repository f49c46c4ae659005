package dev.airlock.server.policy;

import dev.airlock.core.Input;
import dev.airlock.core.Isolation;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.RequestApproval;
import dev.airlock.core.SandboxSpec;
import dev.airlock.core.YamlField;
import dev.airlock.server.wire.LimitChanges;
import dev.airlock.server.wire.LimitField;
import dev.airlock.server.wire.NetworkJson;
import org.snakeyaml.engine.v2.nodes.MappingNode;
import org.snakeyaml.engine.v2.nodes.NodeTuple;
import org.snakeyaml.engine.v2.nodes.SequenceNode;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Reads one entry of a policy file's {@code profiles}: its image and languages, its limits and
 * their maximum, its network, inputs and credentials, its lifetime, approvals and outputs. Limits
 * are read by name through {@link LimitField} and applied with {@link LimitChanges}, as every
 * other door does; the network through {@link NetworkJson}, as the REST API does.
 */
final class ProfileReader {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private static final Set<String> FIELDS = Set.of("image", "languages", "limits", "maxLimits", "network", "inputs", "credentials",
            "maxLifetimeSeconds", "approvals", "approveRequests", "outputs", "isolation", "images", "ports", "onIdle");
    /** The most preview ports a profile may name. */
    static final int MAX_PORTS = 16;
    private static final Set<String> LIMITS = Set.copyOf(LimitField.wireNames());
    private static final Pattern INPUT_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");

    private ProfileReader() {
    }

    /** @param secrets the policy's secrets, which the profile's credentials must be among */
    static Profile read(String name, YamlField y, Map<String, SecretSource> secrets) {
        Map<String, YamlField> f = y.map(FIELDS);
        String image = f.containsKey("image") ? imageName(f.get("image")) : SandboxSpec.SYSTEM_IMAGE;
        List<String> images = new ArrayList<>();
        if (f.containsKey("images")) {
            for (YamlField i : f.get("images").list()) {
                images.add(imageName(i));
            }
            if (!f.containsKey("image") && !images.isEmpty()) {
                image = images.getFirst(); // the first listed is the default
            }
        }
        Set<Language> languages = EnumSet.allOf(Language.class);
        if (f.containsKey("languages")) {
            languages = EnumSet.noneOf(Language.class);
            for (YamlField l : f.get("languages").list()) {
                languages.add(l.check(() -> Language.parse(l.string())));
            }
        }
        Limits limits = f.containsKey("limits") ? limits(f.get("limits"), Limits.DEFAULTS) : Limits.DEFAULTS;
        Limits max = f.containsKey("maxLimits") ? limits(f.get("maxLimits"), limits) : limits;
        NetworkPolicy network = NetworkPolicy.NONE;
        if (f.containsKey("network")) {
            YamlField n = f.get("network");
            network = n.check(() -> NetworkJson.parse(toJson(n)));
        }
        List<Input> inputs = new ArrayList<>();
        if (f.containsKey("inputs")) {
            f.get("inputs").named(INPUT_NAME).forEach((input, p) ->
                    inputs.add(p.check(() -> new Input(input, Path.of(p.string())))));
        }
        List<String> credentials = f.containsKey("credentials") ? credentials(f.get("credentials"), secrets) : List.of();
        if (!credentials.isEmpty() && network.isNone()) {
            throw f.get("credentials").error("a profile with credentials needs a network that reaches their destinations");
        }
        Duration lifetime = Duration.ofHours(24);
        if (f.containsKey("maxLifetimeSeconds")) {
            lifetime = Duration.ofSeconds(f.get("maxLifetimeSeconds").integer(1, 7 * 86_400));
        }
        Set<Approval.Trigger> approvals = f.containsKey("approvals") ? approvals(f.get("approvals")) : Set.of();
        List<RequestApproval> requestApprovals = new ArrayList<>();
        if (f.containsKey("approveRequests")) {
            requestApprovals = requestApprovals(f.get("approveRequests"));
            if (!requestApprovals.isEmpty() && network.isNone()) {
                throw f.get("approveRequests").error("a profile without network makes no requests to approve: give it a network");
            }
        }
        long outputs = Policy.DEFAULT_OUTPUT_BYTES;
        if (f.containsKey("outputs")) {
            YamlField o = f.get("outputs");
            outputs = o.check(() -> Limits.parseSize("outputs", o.string()));
        }
        Isolation isolation = null;
        if (f.containsKey("isolation")) {
            YamlField i = f.get("isolation");
            isolation = i.check(() -> Isolation.parse(i.string()));
        }
        boolean idleToDisk = false;
        if (f.containsKey("onIdle")) {
            YamlField o = f.get("onIdle");
            idleToDisk = switch (o.string()) {
                case "destroy" -> false;
                case "pauseToDisk" -> true;
                default -> throw o.error("onIdle is 'destroy' (the default) or 'pauseToDisk', not '" + o.string() + "'");
            };
            if (idleToDisk && (isolation == null || !isolation.savesProcesses())) {
                throw o.error("onIdle: pauseToDisk needs isolation: gvisor or microvm (the container tier cannot save a sandbox's"
                        + " processes to disk here)");
            }
        }
        Profile profile = new Profile(name, image, languages, limits, max, network, inputs, credentials, lifetime, approvals, requestApprovals,
                outputs, isolation, images, f.containsKey("ports") ? ports(f.get("ports")) : List.of(), idleToDisk);
        List<String> below = profile.exceeding(limits);
        if (!below.isEmpty()) {
            throw f.get("maxLimits").error("maxLimits is below limits for " + String.join(", ", below) + ": raise maxLimits or lower limits");
        }
        return profile;
    }

    /** Preview ports: whole numbers 1 to 65535, each once, at most {@link #MAX_PORTS}. */
    private static List<Integer> ports(YamlField y) {
        List<YamlField> items = y.list();
        if (items.size() > MAX_PORTS) {
            throw y.error("a profile names at most " + MAX_PORTS + " preview ports, not " + items.size());
        }
        List<Integer> ports = new ArrayList<>();
        for (YamlField p : items) {
            int port = (int) p.integer(1, 65535);
            if (ports.contains(port)) {
                throw p.error("port " + port + " is listed twice: name each preview port once");
            }
            ports.add(port);
        }
        return ports;
    }

    /** An image's name: 'system' or a name of the image store (whether it exists is checked when a sandbox is made). */
    private static String imageName(YamlField y) {
        String name = y.string();
        return y.check(() -> SandboxSpec.checkImageName(name));
    }

    /** {@code base} with the limits {@code y} names changed. */
    private static Limits limits(YamlField y, Limits base) {
        Map<String, YamlField> f = y.map(LIMITS);
        return y.check(() -> {
            LimitChanges changes = LimitChanges.read(f::containsKey, field -> switch (field.kind()) {
                case SIZE -> f.get(field.wireName()).size();
                case COUNT -> f.get(field.wireName()).integer(1, 1 << 20);
                case DECIMAL, SECONDS -> f.get(field.wireName()).decimal();
            });
            return changes.applyTo(base);
        });
    }

    private static List<String> credentials(YamlField y, Map<String, SecretSource> secrets) {
        List<String> credentials = new ArrayList<>();
        for (YamlField c : y.list()) {
            String secret = c.string();
            if (!secrets.containsKey(secret)) {
                throw c.error("no secret '" + secret + "' is defined under 'secrets'" + (secrets.isEmpty() ? "" : ": there are "
                        + String.join(", ", secrets.keySet())));
            }
            credentials.add(secret);
        }
        return credentials;
    }

    private static Set<Approval.Trigger> approvals(YamlField y) {
        Set<Approval.Trigger> approvals = EnumSet.noneOf(Approval.Trigger.class);
        for (YamlField a : y.list()) {
            Approval.Trigger t = a.check(() -> Approval.Trigger.parse(a.string()));
            if (t == Approval.Trigger.REQUEST) {
                throw a.error("'request' is set by approveRequests rules, such as {host: api.example.com, methods: [POST]}, not listed here");
            }
            approvals.add(t);
        }
        return approvals;
    }

    private static List<RequestApproval> requestApprovals(YamlField y) {
        List<RequestApproval> requestApprovals = new ArrayList<>();
        for (YamlField r : y.list()) {
            Map<String, YamlField> rf = r.map(Set.of("host", "ports", "methods"));
            if (!rf.containsKey("host") || !rf.containsKey("methods")) {
                throw r.error("a request approval needs 'host' and 'methods', such as {host: api.stripe.com, methods: [POST, DELETE]}");
            }
            List<Integer> ports = new ArrayList<>();
            if (rf.containsKey("ports")) {
                for (YamlField port : rf.get("ports").list()) {
                    ports.add((int) port.integer(1, 65535));
                }
            }
            Set<String> methods = new LinkedHashSet<>();
            rf.get("methods").list().forEach(m -> methods.add(m.string()));
            requestApprovals.add(r.check(() -> new RequestApproval(List.of(new Destination(rf.get("host").string(), ports)), methods)));
        }
        return requestApprovals;
    }

    /** A YAML subtree as JSON, for the network parser the REST API shares: integers as numbers, every other scalar as a string. */
    static JsonNode toJson(YamlField field) {
        if (field.node() instanceof MappingNode m) {
            ObjectNode o = JSON.createObjectNode();
            for (NodeTuple t : m.getValue()) {
                String k = new YamlField("", t.getKeyNode(), field.path()).string();
                o.set(k, toJson(new YamlField("", t.getValueNode(), field.child(k))));
            }
            return o;
        }
        if (field.node() instanceof SequenceNode s) {
            ArrayNode a = JSON.createArrayNode();
            s.getValue().forEach(n -> a.add(toJson(new YamlField("", n, field.path()))));
            return a;
        }
        String v = field.string();
        if (v.matches("-?[0-9]+")) {
            try {
                return JSON.getNodeFactory().numberNode(Long.parseLong(v));
            } catch (NumberFormatException e) {
                return JSON.getNodeFactory().stringNode(v);
            }
        }
        return JSON.getNodeFactory().stringNode(v);
    }
}
