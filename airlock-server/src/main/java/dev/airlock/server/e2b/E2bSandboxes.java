package dev.airlock.server.e2b;

import dev.airlock.core.AirlockException;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.NodeRouting;
import dev.airlock.server.command.SandboxView;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Operation;
import dev.airlock.server.policy.Policy;
import dev.airlock.server.policy.Profile;
import dev.airlock.server.wire.Json;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * E2B's control plane ("E2B API", spec/openapi.yml of the E2B repository) on Airlock's commands:
 * create, describe, list, kill, set the timeout, pause, connect (which resumes a paused sandbox).
 * A template is a profile: as the policy's {@code e2b.templates} maps it, else {@code base} and
 * {@code code-interpreter-v1} (the SDKs' defaults) are the client's first, else it names a
 * profile. E2B's metadata are the sandbox's labels; the template asked for is kept in the label
 * {@value #TEMPLATE_LABEL}, which metadata never show.
 */
final class E2bSandboxes {

    /** The label that keeps the template a sandbox was created from. */
    static final String TEMPLATE_LABEL = "e2b.template";
    /** The SDKs' default template: the client's first profile. */
    static final String BASE = "base";
    /** The code interpreter SDK's default template: the client's first profile too. */
    static final String CODE_INTERPRETER = "code-interpreter-v1";
    /** What a create names no timeout for: E2B's own default, 300 seconds. */
    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(300);

    private static final Pattern SANDBOX_PATH = Pattern.compile("^/(?:v2/)?sandboxes/([^/]+)(/.*)?$");
    private static final Set<String> CREATE_FIELDS = Set.of("templateID", "metadata", "envVars", "timeout", "allow_internet_access", "secure",
            "autoPause", "autoPauseMemory", "autoResume", "network", "mcp", "iam", "volumeMounts");
    /** Fields of a create the door cannot honour: refused when they ask for anything, never ignored. */
    private static final List<String> UNSUPPORTED_CREATE = List.of("network", "mcp", "iam", "volumeMounts", "autoResume");

    private final E2bKeys keys;
    private final Duration maxTtl;
    private final Supplier<Policy> policy;

    /** On a node of a cluster, the header of a listing that some node did not answer: which, and that what it holds is missing. */
    static final String PARTIAL_HEADER = "Airlock-Partial";

    E2bSandboxes(E2bKeys keys, Duration maxTtl, Supplier<Policy> policy) {
        this.keys = keys;
        this.maxTtl = maxTtl;
        this.policy = policy;
    }

    /** The sandbox a control-plane path names, or null. */
    static String sandboxOf(String path) {
        Matcher m = SANDBOX_PATH.matcher(path);
        return m.matches() ? URLDecoder.decode(m.group(1), StandardCharsets.UTF_8) : null;
    }

    /** Whether {@code path} is the collection of sandboxes (a create, a listing). */
    static boolean isSandboxes(String path) {
        return path.equals("/sandboxes") || path.equals("/v2/sandboxes");
    }

    /**
     * The profile a create's {@code body} asks for, by its template, for placing it on a node of a
     * cluster; null when the body is not one the create takes (the node asked then says why).
     */
    Profile profileOf(Client client, byte[] body) {
        try {
            JsonNode create = Json.MAPPER.readTree(body);
            String template = create != null && create.isObject() ? Json.string(create, "templateID") : null;
            String name = profile(client, policy.get().e2bTemplates(), template == null || template.isBlank() ? BASE : template);
            return policy.get().profiles().get(name != null ? name : client.profiles().isEmpty() ? "" : client.profiles().getFirst());
        } catch (RuntimeException e) {
            return null;
        }
    }

    void serve(E2bDoor.Call c) throws IOException {
        String method = c.req.getMethod();
        String path = c.path;
        Matcher m = SANDBOX_PATH.matcher(path);
        String id = m.matches() ? URLDecoder.decode(m.group(1), StandardCharsets.UTF_8) : null;
        String rest = m.matches() && m.group(2) != null ? m.group(2) : "";
        boolean v2 = path.startsWith("/v2/");
        if (id == null && isSandboxes(path)) {
            switch (method) {
                case "POST" -> create(c);
                case "GET" -> list(c);
                default -> notAllowed(c, "GET, POST");
            }
            return;
        }
        if (id == null) {
            c.undecided();
            throw E2bDoor.unsupported("Airlock's E2B door does not serve " + method + " " + Json.printable(path, 120)
                    + ": it serves sandboxes (create, get, list, kill, timeout, pause, connect) and their envd; templates,"
                    + " snapshots, volumes and secrets are Airlock's own (its images, snapshots and policy: see docs/e2b.md)");
        }
        switch (method + " " + (v2 ? "/v2" : "") + rest) {
            case "GET " -> {
                c.authorize(Operation.SANDBOX_READ);
                c.send(200, detail(c.client, c.execute(new Command.Describe(id))));
            }
            case "DELETE " -> {
                c.authorize(Operation.SANDBOX_DESTROY);
                c.execute(new Command.Destroy(id));
                c.resp.setStatus(204);
            }
            case "POST /timeout" -> {
                c.authorize(Operation.SANDBOX_EXTEND);
                JsonNode body = Json.parseObject(c.body(), Set.of("timeout"));
                c.execute(new Command.ExtendTtl(id, seconds(body, "timeout", null)));
                c.resp.setStatus(204);
            }
            case "POST /pause" -> {
                c.authorize(Operation.SANDBOX_PAUSE);
                SandboxView s = c.execute(new Command.Describe(id));
                if (s.state().equals("paused")) {
                    throw new AirlockException(AirlockException.Kind.CONFLICT, "sandbox " + id + " is already paused");
                }
                // E2B's pause keeps the processes and frees the sandbox's resources: on gVisor and the microVM to disk, unless a
                // command still runs (an execution's channel cannot be saved: 409) or the sandbox cannot be saved (a microVM of the
                // image system: 503), when it is frozen in memory as on the container tier
                boolean toDisk = s.isolation().savesProcesses();
                try {
                    c.execute(new Command.Pause(id, toDisk));
                } catch (AirlockException e) {
                    if (!toDisk || (e.kind() != AirlockException.Kind.CONFLICT && e.kind() != AirlockException.Kind.UNAVAILABLE)) {
                        throw e;
                    }
                    c.execute(new Command.Pause(id));
                }
                c.resp.setStatus(204);
            }
            case "POST /v2/connect", "POST /resume" -> connect(c, id);
            case "POST /fork" -> fork(c, id);
            case "GET /metrics" -> {
                c.authorize(Operation.SANDBOX_READ);
                c.send(200, metrics(c.execute(new Command.Describe(id)), c.req.getParameter("start"), c.req.getParameter("end")));
            }
            default -> {
                c.undecided();
                throw E2bDoor.unsupported("Airlock's E2B door does not serve " + method + " " + Json.printable(path, 120)
                        + " (snapshots, network updates and logs are not mapped yet: see docs/e2b.md for what is)");
            }
        }
    }

    private static void notAllowed(E2bDoor.Call c, String allowed) throws IOException {
        c.undecided();
        c.resp.setHeader("Allow", allowed);
        E2bDoor.error(c.resp, 405, "method not allowed here: use " + allowed);
    }

    private void create(E2bDoor.Call c) throws IOException {
        c.authorize(Operation.SANDBOX_CREATE);
        JsonNode body = Json.parseObject(c.body(), CREATE_FIELDS);
        for (String field : UNSUPPORTED_CREATE) {
            JsonNode v = body.get(field);
            if (v != null && !v.isNull() && !(v.isContainer() && v.isEmpty())) {
                throw E2bDoor.unsupported("'" + field + "' is not supported by Airlock's E2B door: a sandbox's network, credentials and"
                        + " inputs come from its profile in Airlock's policy (docs/policy.md); leave '" + field + "' out");
            }
        }
        if (Json.bool(body, "autoPause")) {
            throw E2bDoor.unsupported("'autoPause' is not supported by Airlock's E2B door: a sandbox ends at its timeout; pause it"
                    + " with Sandbox.pause() before then");
        }
        String template = Json.string(body, "templateID");
        template = template == null || template.isBlank() ? BASE : template;
        String profile = profile(c.client, policy.get().e2bTemplates(), template);
        Map<String, String> labels = new LinkedHashMap<>(Json.stringMap(body, "metadata"));
        labels.put(TEMPLATE_LABEL, template);
        // allow_internet_access can only narrow: false takes the network away, true keeps the profile's
        NetworkPolicy network = body.has("allow_internet_access") && !body.get("allow_internet_access").isNull()
                && !Json.bool(body, "allow_internet_access") ? NetworkPolicy.NONE : null;
        Map<String, String> env = new LinkedHashMap<>(Json.stringMap(body, "envVars"));
        env.putIfAbsent("HOME", Envd.HOME);
        SandboxView s = c.execute(new Command.Create(profile, null, null, env, network, labels,
                seconds(body, "timeout", DEFAULT_TIMEOUT), null, null));
        c.send(201, sandbox(c.client, s));
    }

    /**
     * The profile of {@code template} for {@code client}: the one the policy's {@code e2b.templates}
     * maps it to; else its first for {@value #BASE} and {@value #CODE_INTERPRETER}; else the profile of
     * that name. Whether the client may use it is the profile control's to say, as for any create.
     */
    private static String profile(Client client, Map<String, String> mapped, String template) {
        if (mapped.containsKey(template)) {
            return mapped.get(template);
        }
        if (template.equals(BASE) || template.equals(CODE_INTERPRETER)) {
            return null;
        }
        if (client.profiles().contains(template)) {
            return template;
        }
        Set<String> known = new java.util.LinkedHashSet<>(List.of(BASE, CODE_INTERPRETER));
        known.addAll(mapped.keySet());
        known.addAll(client.profiles());
        throw AirlockException.invalid("unknown template '" + Json.printable(template, 64) + "': a template here is one of your Airlock"
                + " profiles, or one the policy's e2b.templates maps to a profile (" + BASE + " and " + CODE_INTERPRETER + ": your first, '"
                + client.profiles().getFirst() + "'): " + String.join(", ", known));
    }

    private Duration seconds(JsonNode body, String field, Duration absent) {
        Double s = Json.number(body, field);
        if (s == null) {
            return absent;
        }
        if (s < 0 || s != Math.rint(s)) {
            throw AirlockException.invalid("'" + field + "' is a whole number of seconds, not " + s);
        }
        if (s > maxTtl.toSeconds()) {
            throw AirlockException.invalid("'" + field + "' of " + s.longValue() + " s is over the longest a sandbox may live on this server ("
                    + maxTtl.toSeconds() + " s)");
        }
        return Duration.ofSeconds(s.longValue());
    }

    private void list(E2bDoor.Call c) throws IOException {
        c.authorize(Operation.SANDBOX_READ);
        Map<String, String> metadata = new LinkedHashMap<>();
        String query = c.req.getQueryString() == null ? "" : c.req.getQueryString();
        List<String> states = List.of("running", "paused");
        for (String pair : query.split("&")) {
            int eq = pair.indexOf('=');
            if (eq < 0) {
                continue;
            }
            String key = URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8);
            String value = URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            if (key.equals("metadata") || key.equals("query")) {
                // the SDK sends metadata as a query string of its own: key=value&key=value, each part encoded
                for (String m : value.split("&")) {
                    int meq = m.indexOf('=');
                    if (meq > 0) {
                        metadata.put(URLDecoder.decode(m.substring(0, meq), StandardCharsets.UTF_8),
                                URLDecoder.decode(m.substring(meq + 1), StandardCharsets.UTF_8));
                    }
                }
            } else if (key.equals("state") && !value.isEmpty()) {
                states = List.of(value.split(","));
            }
        }
        ArrayNode out = Json.MAPPER.createArrayNode();
        for (SandboxView s : c.execute(new Command.ListSandboxes(metadata))) {
            if (states.contains(s.state())) {
                out.add(listed(s));
            }
        }
        NodeRouting.Answers others = c.others();
        if (others != null) {
            // every other node's listing, the same query sent on; a node that did not answer is named in a header
            for (byte[] answer : others.bodies()) {
                JsonNode theirs = Json.MAPPER.readTree(answer);
                if (theirs != null && theirs.isArray()) {
                    theirs.forEach(out::add);
                }
            }
            if (others.partial() != null) {
                c.resp.setHeader(PARTIAL_HEADER, others.partial());
            }
        }
        c.resp.setStatus(200);
        c.resp.setContentType("application/json");
        c.resp.getOutputStream().write(out.toString().getBytes(StandardCharsets.UTF_8));
    }

    /**
     * E2B's connect: the sandbox, resumed if it was paused, so it is authorized as
     * {@code sandbox.pause}; then, as E2B does, its end moved to {@code timeout} from now when that
     * is later, never earlier: a second operation, {@code sandbox.extend}, authorized then (a client
     * without it finds the sandbox resumed and the extension refused, by name).
     */
    private void connect(E2bDoor.Call c, String id) throws IOException {
        c.authorize(Operation.SANDBOX_PAUSE);
        JsonNode body = Json.parseObject(c.body(), Set.of("timeout", "autoPause", "memory"));
        Duration timeout = seconds(body, "timeout", null);
        SandboxView s = c.execute(new Command.Describe(id));
        if (s.state().equals("paused")) {
            s = c.execute(new Command.Resume(id));
        }
        if (timeout != null && java.time.Instant.now().plus(timeout).isAfter(s.expiresAt())) {
            c.authorize(Operation.SANDBOX_EXTEND);
            s = c.execute(new Command.ExtendTtl(id, timeout));
        }
        c.send(200, sandbox(c.client, s));
    }

    /**
     * E2B's fork of a running sandbox: a snapshot of its files, then {@code count} sandboxes restored
     * from it through every control, as one create is (all or none). Two operations in Airlock, so
     * authorized twice: {@code sandbox.snapshot}, then {@code sandbox.create}. The forks have its
     * profile, environment and metadata, and the {@code timeout} asked for; its processes and memory
     * are not carried over (an Airlock snapshot keeps files). The snapshot is kept as long as the
     * forks may live, among the client's snapshots.
     */
    private void fork(E2bDoor.Call c, String id) throws IOException {
        c.authorize(Operation.SANDBOX_SNAPSHOT);
        JsonNode body = Json.parseObject(c.body(), Set.of("timeout", "count"));
        Double count = body.hasNonNull("count") ? Json.number(body, "count") : Double.valueOf(1);
        if (count == null || count != Math.rint(count) || count < 1 || count > Command.Fork.MAX_COUNT) {
            throw AirlockException.invalid("'count' is a whole number from 1 to " + Command.Fork.MAX_COUNT);
        }
        Duration timeout = seconds(body, "timeout", DEFAULT_TIMEOUT);
        SandboxView source = c.execute(new Command.Describe(id));
        Command.SnapshotView snapshot = c.execute(new Command.TakeSnapshot(id, timeout, false));
        c.authorize(Operation.SANDBOX_CREATE);
        Command.Create create = new Command.Create(source.profile().name(), null, null, source.spec().env(), source.network(), source.labels(),
                timeout, null, null).from(snapshot.id());
        ArrayNode out = Json.MAPPER.createArrayNode();
        for (SandboxView s : c.execute(new Command.Fork(create, count.intValue()))) {
            out.addObject().set("sandbox", sandbox(c.client, s));
        }
        c.send(201, out);
    }

    /**
     * E2B's metrics of a sandbox: one entry, now, from its cgroup (none where its tier cannot tell,
     * or when now is outside the {@code start}..{@code end} asked for, in Unix seconds). Airlock keeps
     * no history of a sandbox's use: the CPU share is its average since it started, of the CPUs its
     * limits give it. Its files live in memory (tmpfs), so they count in {@code memUsed}; the disk
     * figures are the disk limit and 0 used, and {@code memCache} is 0: neither is told apart.
     */
    static ArrayNode metrics(SandboxView s, String start, String end) {
        ArrayNode out = Json.MAPPER.createArrayNode();
        dev.airlock.core.IsolationDriver.Usage usage = s.usage();
        java.time.Instant now = java.time.Instant.now();
        if (usage == null || now.getEpochSecond() < unixSeconds(start, 0) || now.getEpochSecond() > unixSeconds(end, Long.MAX_VALUE)) {
            return out;
        }
        double cpus = s.spec().limits().cpus();
        double lifetimeNanos = Math.max(1, Duration.between(s.createdAt(), now).toNanos());
        double percent = Math.min(100, 100.0 * usage.cpuNanos() / lifetimeNanos / cpus);
        out.addObject()
                .put("timestamp", now.toString())
                .put("timestampUnix", now.getEpochSecond())
                .put("cpuCount", Math.max(1, (int) Math.ceil(cpus)))
                .put("cpuUsedPct", Math.round(percent * 100) / 100.0)
                .put("memUsed", usage.memoryBytes())
                .put("memTotal", s.spec().limits().memoryBytes())
                .put("memCache", 0)
                .put("diskUsed", 0)
                .put("diskTotal", s.spec().limits().diskBytes());
        return out;
    }

    private static long unixSeconds(String value, long absent) {
        if (value == null || value.isEmpty()) {
            return absent;
        }
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw AirlockException.invalid("'start' and 'end' are Unix times in seconds, not " + Json.printable(value, 32));
        }
    }

    /** A created or connected sandbox, as E2B's {@code Sandbox}: with the access token of its envd. */
    private ObjectNode sandbox(Client client, SandboxView s) {
        return Json.object()
                .put("sandboxID", s.id())
                .put("templateID", template(s))
                .put("alias", template(s))
                .put("clientID", "airlock")
                .put("envdVersion", Envd.VERSION)
                .put("envdAccessToken", keys.accessToken(client, s.id()))
                // the code interpreter's SDK sends only this one with its context calls: the same token
                .put("trafficAccessToken", keys.accessToken(client, s.id()))
                .putNull("domain");
    }

    private ObjectNode detail(Client client, SandboxView s) {
        ObjectNode n = listed(s);
        n.put("envdAccessToken", keys.accessToken(client, s.id()));
        n.putNull("domain");
        return n;
    }

    private static ObjectNode listed(SandboxView s) {
        ObjectNode n = Json.object()
                .put("sandboxID", s.id())
                .put("templateID", template(s))
                .put("alias", template(s))
                .put("clientID", "airlock")
                .put("startedAt", s.createdAt().toString())
                .put("endAt", s.expiresAt().toString())
                .put("state", s.state())
                .put("cpuCount", Math.max(1, (int) Math.ceil(s.spec().limits().cpus())))
                .put("memoryMB", s.spec().limits().memoryBytes() >> 20)
                .put("diskSizeMB", s.spec().limits().diskBytes() >> 20)
                .put("envdVersion", Envd.VERSION);
        ObjectNode metadata = n.putObject("metadata");
        s.labels().forEach((k, v) -> {
            if (!k.equals(TEMPLATE_LABEL)) {
                metadata.put(k, v);
            }
        });
        n.putArray("volumeMounts");
        return n;
    }

    private static String template(SandboxView s) {
        return s.labels().getOrDefault(TEMPLATE_LABEL, s.profile().name());
    }
}
