package dev.airlock.server.policy;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Input;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.server.command.LimitChanges;
import dev.airlock.server.command.LimitField;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.RequestApproval;
import dev.airlock.core.SandboxSpec;
import dev.airlock.server.NetworkJson;
import org.snakeyaml.engine.v2.api.LoadSettings;
import org.snakeyaml.engine.v2.api.lowlevel.Compose;
import org.snakeyaml.engine.v2.exceptions.Mark;
import org.snakeyaml.engine.v2.exceptions.MarkedYamlEngineException;
import org.snakeyaml.engine.v2.exceptions.YamlEngineException;
import org.snakeyaml.engine.v2.nodes.MappingNode;
import org.snakeyaml.engine.v2.nodes.Node;
import org.snakeyaml.engine.v2.nodes.NodeTuple;
import org.snakeyaml.engine.v2.nodes.ScalarNode;
import org.snakeyaml.engine.v2.nodes.SequenceNode;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Reads a policy file (docs/policy.md). Everything is checked at load: an unknown field, a wrong
 * type, a profile a client names that does not exist, a limit a profile's maximum is below. Every
 * error names the file, the line and the field, such as
 * {@code policy.yaml line 12, profiles.default.limits.memory: ...}.
 */
public final class PolicyFile {

    private static final Set<String> TOP = Set.of("version", "approvals", "secrets", "profiles", "clients");
    private static final Set<String> SECRET = Set.of("env", "file", "header", "prefix", "destinations");
    private static final Set<String> PROFILE = Set.of("image", "languages", "limits", "maxLimits", "network", "inputs", "credentials",
            "maxLifetimeSeconds", "approvals", "approveRequests", "outputs");
    private static final Set<String> LIMITS = Set.copyOf(LimitField.wireNames());
    private static final Set<String> CLIENT = Set.of("tokenSha256", "tokenFile", "profiles", "allow", "quotas");
    private static final Set<String> QUOTAS = Set.of("sandboxes", "executionsPerMinute");
    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");
    private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final String source;

    private PolicyFile(String source) {
        this.source = source;
    }

    /** Loads and checks {@code file}. */
    public static Policy load(Path file) {
        String text;
        try {
            text = Files.readString(file);
        } catch (IOException e) {
            throw AirlockException.invalid("cannot read the policy file " + file + ": " + e.getMessage());
        }
        return parse(file.toString(), text, file.toAbsolutePath().getParent());
    }

    /** Parses policy text; {@code base} resolves relative token files. */
    public static Policy parse(String source, String text, Path base) {
        return new PolicyFile(source).read(text, base);
    }

    private Policy read(String text, Path base) {
        LoadSettings settings = LoadSettings.builder().setMaxAliasesForCollections(16)
                .setLabel(source).build();
        Node root;
        try {
            root = new Compose(settings).composeString(text).orElse(null);
        } catch (MarkedYamlEngineException e) {
            int line = e.getProblemMark().map(Mark::getLine).orElse(-1) + 1;
            throw AirlockException.invalid(source + " line " + line + ": not valid YAML: " + e.getProblem());
        } catch (YamlEngineException e) {
            throw AirlockException.invalid(source + ": not valid YAML: " + e.getMessage());
        }
        if (root == null) {
            throw AirlockException.invalid(source + " is empty: it needs at least 'profiles' and 'clients' (see docs/policy.md)");
        }
        Y top = new Y(root, "");
        Map<String, Y> fields = top.map(TOP);
        if (fields.containsKey("version") && fields.get("version").integer(1, 1) != 1) {
            throw fields.get("version").error("only version 1 exists");
        }
        Duration approvalTimeout = Policy.DEFAULT_APPROVAL_TIMEOUT;
        boolean elicitation = true;
        if (fields.containsKey("approvals")) {
            Map<String, Y> a = fields.get("approvals").map(Set.of("timeoutSeconds", "elicitation"));
            if (a.containsKey("timeoutSeconds")) {
                approvalTimeout = Duration.ofSeconds(a.get("timeoutSeconds").integer(1, 86_400));
            }
            if (a.containsKey("elicitation")) {
                elicitation = a.get("elicitation").bool();
            }
        }
        Map<String, SecretSource> secrets = new LinkedHashMap<>();
        if (fields.containsKey("secrets")) {
            fields.get("secrets").named().forEach((name, y) -> secrets.put(name, secret(name, y)));
        }
        Y profilesNode = fields.get("profiles");
        if (profilesNode == null) {
            throw top.error("'profiles' is missing: name at least one profile (see docs/policy.md)");
        }
        Map<String, Profile> profiles = new LinkedHashMap<>();
        profilesNode.named().forEach((name, y) -> profiles.put(name, profile(name, y, secrets)));
        Y clientsNode = fields.get("clients");
        if (clientsNode == null) {
            throw top.error("'clients' is missing: name at least one client with its token (see docs/policy.md)");
        }
        Map<String, Client> clients = new LinkedHashMap<>();
        Map<String, String> tokens = new LinkedHashMap<>();
        clientsNode.named().forEach((name, y) -> {
            Client c = client(name, y, profiles, base);
            String hex = HexFormat.of().formatHex(c.tokenSha256());
            if (tokens.containsKey(hex)) {
                throw y.error("client '" + name + "' has the same token as client '" + tokens.get(hex) + "': give each client its own token");
            }
            tokens.put(hex, name);
            clients.put(name, c);
        });
        if (clients.isEmpty()) {
            throw clientsNode.error("no client is defined: nobody could use the server");
        }
        return new Policy(source, profiles, clients, secrets, approvalTimeout, elicitation);
    }

    private SecretSource secret(String name, Y y) {
        Map<String, Y> f = y.map(SECRET);
        Y env = f.get("env");
        Y file = f.get("file");
        if ((env == null) == (file == null)) {
            throw y.error("give exactly one of 'env' (an environment variable of the server) or 'file' (a path on the server's host);"
                    + " the value itself never goes in the policy");
        }
        Path path = null;
        if (file != null) {
            path = Path.of(file.string());
            if (!path.isAbsolute()) {
                throw file.error("the file must be an absolute path");
            }
        }
        Y header = f.get("header");
        Y prefix = f.get("prefix");
        Y dest = f.get("destinations");
        if (dest == null) {
            throw y.error("'destinations' is missing: a secret is sent only to the destinations it is bound to, such as [\"api.github.com:443\"]");
        }
        List<Destination> destinations = new ArrayList<>();
        for (Y d : dest.list()) {
            destinations.add(d.check(() -> destination(d.string())));
        }
        if (destinations.isEmpty()) {
            throw dest.error("name at least one destination");
        }
        String h = header == null ? "Authorization" : header.string();
        String p = prefix == null ? "" : prefix.string();
        Path finalPath = path;
        return y.check(() -> {
            SecretSource s = new SecretSource(name, env == null ? null : env.string(), finalPath, h, p, destinations);
            // validates the header name and destinations, with a placeholder value
            new dev.airlock.core.Credential(name, destinations, h, new dev.airlock.core.Secret("check"));
            return s;
        });
    }

    /** {@code host} or {@code host:port}. */
    private static Destination destination(String text) {
        int colon = text.lastIndexOf(':');
        if (colon < 0) {
            return new Destination(text, List.of());
        }
        String port = text.substring(colon + 1);
        if (!port.matches("[0-9]{1,5}")) {
            throw AirlockException.invalid("'" + text + "' is not host or host:port");
        }
        return new Destination(text.substring(0, colon), List.of(Integer.parseInt(port)));
    }

    private Profile profile(String name, Y y, Map<String, SecretSource> secrets) {
        Map<String, Y> f = y.map(PROFILE);
        String image = f.containsKey("image") ? f.get("image").string() : SandboxSpec.SYSTEM_IMAGE;
        Set<Language> languages = EnumSet.allOf(Language.class);
        if (f.containsKey("languages")) {
            languages = EnumSet.noneOf(Language.class);
            for (Y l : f.get("languages").list()) {
                languages.add(l.check(() -> Language.parse(l.string())));
            }
        }
        Limits limits = f.containsKey("limits") ? limits(f.get("limits"), Limits.DEFAULTS) : Limits.DEFAULTS;
        Limits max = f.containsKey("maxLimits") ? limits(f.get("maxLimits"), limits) : limits;
        NetworkPolicy network = NetworkPolicy.NONE;
        if (f.containsKey("network")) {
            Y n = f.get("network");
            network = n.check(() -> NetworkJson.parse(n.json()));
        }
        List<Input> inputs = new ArrayList<>();
        if (f.containsKey("inputs")) {
            f.get("inputs").named(Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,62}")).forEach((input, p) ->
                    inputs.add(p.check(() -> new Input(input, Path.of(p.string())))));
        }
        List<String> credentials = new ArrayList<>();
        if (f.containsKey("credentials")) {
            for (Y c : f.get("credentials").list()) {
                String secret = c.string();
                if (!secrets.containsKey(secret)) {
                    throw c.error("no secret '" + secret + "' is defined under 'secrets'" + (secrets.isEmpty() ? "" : ": there are "
                            + String.join(", ", secrets.keySet())));
                }
                credentials.add(secret);
            }
        }
        if (!credentials.isEmpty() && network.isNone()) {
            throw f.get("credentials").error("a profile with credentials needs a network that reaches their destinations");
        }
        Duration lifetime = Duration.ofHours(24);
        if (f.containsKey("maxLifetimeSeconds")) {
            lifetime = Duration.ofSeconds(f.get("maxLifetimeSeconds").integer(1, 7 * 86_400));
        }
        Set<Approval.Trigger> approvals = EnumSet.noneOf(Approval.Trigger.class);
        if (f.containsKey("approvals")) {
            for (Y a : f.get("approvals").list()) {
                Approval.Trigger t = a.check(() -> Approval.Trigger.parse(a.string()));
                if (t == Approval.Trigger.REQUEST) {
                    throw a.error("'request' is set by approveRequests rules, such as {host: api.example.com, methods: [POST]}, not listed here");
                }
                approvals.add(t);
            }
        }
        List<RequestApproval> requestApprovals = new ArrayList<>();
        if (f.containsKey("approveRequests")) {
            for (Y r : f.get("approveRequests").list()) {
                Map<String, Y> rf = r.map(Set.of("host", "ports", "methods"));
                if (!rf.containsKey("host") || !rf.containsKey("methods")) {
                    throw r.error("a request approval needs 'host' and 'methods', such as {host: api.stripe.com, methods: [POST, DELETE]}");
                }
                List<Integer> ports = new ArrayList<>();
                if (rf.containsKey("ports")) {
                    for (Y port : rf.get("ports").list()) {
                        ports.add((int) port.integer(1, 65535));
                    }
                }
                Set<String> methods = new java.util.LinkedHashSet<>();
                rf.get("methods").list().forEach(m -> methods.add(m.string()));
                requestApprovals.add(r.check(() -> new RequestApproval(List.of(new Destination(rf.get("host").string(), ports)), methods)));
            }
            if (!requestApprovals.isEmpty() && network.isNone()) {
                throw f.get("approveRequests").error("a profile without network makes no requests to approve: give it a network");
            }
        }
        long outputs = Policy.DEFAULT_OUTPUT_BYTES;
        if (f.containsKey("outputs")) {
            Y o = f.get("outputs");
            outputs = o.check(() -> Limits.parseSize("outputs", o.string()));
        }
        Profile profile = new Profile(name, image, languages, limits, max, network, inputs, credentials, lifetime, approvals, requestApprovals, outputs);
        List<String> below = profile.exceeding(limits);
        if (!below.isEmpty()) {
            throw f.get("maxLimits").error("maxLimits is below limits for " + String.join(", ", below) + ": raise maxLimits or lower limits");
        }
        return profile;
    }

    private Limits limits(Y y, Limits base) {
        Map<String, Y> f = y.map(LIMITS);
        return y.check(() -> {
            LimitChanges changes = LimitChanges.read(f::containsKey, field -> switch (field.kind()) {
                case SIZE -> f.get(field.wireName()).size();
                case COUNT -> f.get(field.wireName()).integer(1, 1 << 20);
                case DECIMAL, SECONDS -> f.get(field.wireName()).decimal();
            });
            return changes.applyTo(base);
        });
    }

    private Client client(String name, Y y, Map<String, Profile> profiles, Path base) {
        Map<String, Y> f = y.map(CLIENT);
        Y sha = f.get("tokenSha256");
        Y file = f.get("tokenFile");
        if ((sha == null) == (file == null)) {
            throw y.error("give exactly one of 'tokenSha256' (the SHA-256 of the client's token, from 'airlock policy token') or 'tokenFile'"
                    + " (a file holding the token, readable only by its owner)");
        }
        byte[] hash;
        if (sha != null) {
            String hex = sha.string().toLowerCase(java.util.Locale.ROOT);
            if (!SHA256.matcher(hex).matches()) {
                throw sha.error("not a SHA-256 in hex (64 characters 0-9a-f): make one with 'airlock policy token'");
            }
            hash = HexFormat.of().parseHex(hex);
        } else {
            Path p = base == null ? Path.of(file.string()) : base.resolve(file.string());
            hash = file.check(() -> Policy.sha256(TokenFile.read(p)));
        }
        List<String> allowedProfiles = new ArrayList<>();
        Y ps = f.get("profiles");
        if (ps == null) {
            throw y.error("'profiles' is missing: list the profiles this client may create sandboxes with (the first is its default)");
        }
        for (Y p : ps.list()) {
            String profile = p.string();
            if (!profiles.containsKey(profile)) {
                throw p.error("no profile '" + profile + "' is defined: there are " + String.join(", ", profiles.keySet()));
            }
            allowedProfiles.add(profile);
        }
        if (allowedProfiles.isEmpty()) {
            throw ps.error("list at least one profile");
        }
        Set<Operation> operations = EnumSet.noneOf(Operation.class);
        Y allow = f.get("allow");
        if (allow == null) {
            throw y.error("'allow' is missing: list what this client may call (" + Operation.names() + "), or [\"*\"] for everything");
        }
        for (Y o : allow.list()) {
            String op = o.string();
            if (op.equals("*")) {
                operations.addAll(EnumSet.allOf(Operation.class));
            } else {
                operations.add(o.check(() -> Operation.parse(op)));
            }
        }
        int sandboxes = 0;
        int perMinute = 0;
        if (f.containsKey("quotas")) {
            Map<String, Y> q = f.get("quotas").map(QUOTAS);
            if (q.containsKey("sandboxes")) sandboxes = (int) q.get("sandboxes").integer(1, 100_000);
            if (q.containsKey("executionsPerMinute")) perMinute = (int) q.get("executionsPerMinute").integer(1, 1_000_000);
        }
        return new Client(name, hash, allowedProfiles, operations, sandboxes, perMinute);
    }

    /** A node with its path, for errors that name the line and the field. */
    private final class Y {
        final Node node;
        final String path;

        Y(Node node, String path) {
            this.node = node;
            this.path = path;
        }

        int line() {
            return node.getStartMark().map(Mark::getLine).orElse(-1) + 1;
        }

        AirlockException error(String message) {
            return AirlockException.invalid(source + " line " + line() + (path.isEmpty() ? "" : ", " + path) + ": " + message);
        }

        /** Runs a check that throws AirlockException, and puts this node's line and field on its message. */
        <T> T check(java.util.function.Supplier<T> parse) {
            try {
                return parse.get();
            } catch (AirlockException e) {
                throw error(e.getMessage());
            }
        }

        private String child(String key) {
            return path.isEmpty() ? key : path + "." + key;
        }

        Map<String, Y> map(Set<String> allowed) {
            if (!(node instanceof MappingNode m)) {
                throw error("expected a mapping (key: value lines)");
            }
            Map<String, Y> out = new LinkedHashMap<>();
            for (NodeTuple t : m.getValue()) {
                Y key = new Y(t.getKeyNode(), path);
                String k = key.string();
                if (allowed != null && !allowed.contains(k)) {
                    throw new Y(t.getKeyNode(), child(k)).error("unknown field '" + k + "': allowed here are "
                            + String.join(", ", new java.util.TreeSet<>(allowed)));
                }
                if (out.containsKey(k)) {
                    throw new Y(t.getKeyNode(), child(k)).error("'" + k + "' appears twice: keep one");
                }
                out.put(k, new Y(t.getValueNode(), child(k)));
            }
            return out;
        }

        /** A mapping of user-chosen names (profiles, clients, secrets). */
        Map<String, Y> named() {
            return named(NAME);
        }

        Map<String, Y> named(Pattern pattern) {
            Map<String, Y> out = map(null);
            for (Map.Entry<String, Y> e : out.entrySet()) {
                if (!pattern.matcher(e.getKey()).matches()) {
                    throw e.getValue().error("'" + e.getKey() + "' is not a valid name: use " + pattern.pattern());
                }
            }
            return out;
        }

        List<Y> list() {
            if (!(node instanceof SequenceNode s)) {
                throw error("expected a list, such as [a, b]");
            }
            List<Y> out = new ArrayList<>();
            for (int i = 0; i < s.getValue().size(); i++) {
                out.add(new Y(s.getValue().get(i), path + "[" + i + "]"));
            }
            return out;
        }

        String string() {
            if (!(node instanceof ScalarNode s)) {
                throw error("expected a single value, not a list or mapping");
            }
            return s.getValue();
        }

        long integer(long min, long max) {
            String s = string();
            try {
                long v = Long.parseLong(s.replace("_", ""));
                if (v < min || v > max) {
                    throw error(s + " is out of range: give " + min + " to " + max);
                }
                return v;
            } catch (NumberFormatException e) {
                throw error("'" + s + "' is not a whole number");
            }
        }

        boolean bool() {
            String s = string();
            return switch (s) {
                case "true" -> true;
                case "false" -> false;
                default -> throw error("'" + s + "' is not true or false");
            };
        }

        double decimal() {
            String s = string();
            try {
                return Double.parseDouble(s);
            } catch (NumberFormatException e) {
                throw error("'" + s + "' is not a number");
            }
        }

        long size() {
            String s = string();
            return check(() -> Limits.parseSize(path, s));
        }

        /** The subtree as JSON, for parsers shared with the REST API. */
        JsonNode json() {
            if (node instanceof MappingNode m) {
                ObjectNode o = JSON.createObjectNode();
                for (NodeTuple t : m.getValue()) {
                    String k = new Y(t.getKeyNode(), path).string();
                    o.set(k, new Y(t.getValueNode(), child(k)).json());
                }
                return o;
            }
            if (node instanceof SequenceNode s) {
                ArrayNode a = JSON.createArrayNode();
                s.getValue().forEach(n -> a.add(new Y(n, path).json()));
                return a;
            }
            String v = string();
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
}
