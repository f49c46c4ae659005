package dev.airlock.server.policy;

import dev.airlock.core.Input;
import dev.airlock.core.Isolation;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.RequestApproval;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What a sandbox made under this profile gets and may ask for.
 *
 * @param limits      the limits a sandbox gets when it asks for none
 * @param maxLimits   the most it may ask for, field by field
 * @param network     its network when it asks for none, and the most it may ask for
 * @param inputs      host paths shown read-only at /inputs/NAME
 * @param credentials names of the policy's secrets the egress proxy injects for it
 * @param maxLifetime the longest time-to-live it may have, extensions included
 * @param approvals   which of its actions wait for a person
 * @param requestApprovals egress requests that wait for a person (such as a POST to a payment API)
 * @param outputBytes how much of /workspace/output is kept when it ends (0: nothing)
 * @param isolation   the tier its sandboxes must get (a server whose driver gives another refuses to start); null: the server's
 * @param images      the images a request may pick ({@code image} is the one it gets when it picks none, and always among them)
 * @param ports       the TCP ports inside its sandboxes that the owner may reach through the server (preview ports,
 *                    docs/security-model.md); empty: none
 * @param idleToDisk  whether a sandbox idle for its idle timeout is paused to disk (its processes saved, its memory freed,
 *                    resumed on request) instead of destroyed: {@code onIdle: pauseToDisk}, gVisor profiles only
 */
public record Profile(String name, String image, Set<Language> languages, Limits limits, Limits maxLimits, NetworkPolicy network,
                      List<Input> inputs, List<String> credentials, Duration maxLifetime, Set<Approval.Trigger> approvals,
                      List<RequestApproval> requestApprovals, long outputBytes, Isolation isolation, List<String> images, List<Integer> ports,
                      boolean idleToDisk) {

    /** A profile whose idle sandboxes are destroyed. */
    public Profile(String name, String image, Set<Language> languages, Limits limits, Limits maxLimits, NetworkPolicy network,
                   List<Input> inputs, List<String> credentials, Duration maxLifetime, Set<Approval.Trigger> approvals,
                   List<RequestApproval> requestApprovals, long outputBytes, Isolation isolation, List<String> images, List<Integer> ports) {
        this(name, image, languages, limits, maxLimits, network, inputs, credentials, maxLifetime, approvals, requestApprovals,
                outputBytes, isolation, images, ports, false);
    }

    /** A profile that names no preview ports. */
    public Profile(String name, String image, Set<Language> languages, Limits limits, Limits maxLimits, NetworkPolicy network,
                   List<Input> inputs, List<String> credentials, Duration maxLifetime, Set<Approval.Trigger> approvals,
                   List<RequestApproval> requestApprovals, long outputBytes, Isolation isolation, List<String> images) {
        this(name, image, languages, limits, maxLimits, network, inputs, credentials, maxLifetime, approvals, requestApprovals,
                outputBytes, isolation, images, List.of());
    }

    /** A profile whose only image is {@code image}. */
    public Profile(String name, String image, Set<Language> languages, Limits limits, Limits maxLimits, NetworkPolicy network,
                   List<Input> inputs, List<String> credentials, Duration maxLifetime, Set<Approval.Trigger> approvals,
                   List<RequestApproval> requestApprovals, long outputBytes, Isolation isolation) {
        this(name, image, languages, limits, maxLimits, network, inputs, credentials, maxLifetime, approvals, requestApprovals,
                outputBytes, isolation, List.of(image));
    }

    public Profile {
        List<String> allowed = new ArrayList<>(images == null ? List.of() : images);
        if (!allowed.contains(image)) {
            allowed.addFirst(image);
        }
        images = List.copyOf(allowed);
        languages = Set.copyOf(languages);
        inputs = List.copyOf(inputs);
        credentials = List.copyOf(credentials);
        approvals = Set.copyOf(approvals);
        requestApprovals = List.copyOf(requestApprovals);
        ports = ports == null ? List.of() : List.copyOf(ports);
    }

    public String rule(String field) {
        return "profiles." + name + "." + field;
    }

    /** The fields of {@code asked} above {@link #maxLimits}, each as "memory 2 GiB > 512 MiB"; empty when none. */
    public List<String> exceeding(Limits asked) {
        Limits m = maxLimits;
        List<String> over = new ArrayList<>();
        over(over, "memory", asked.memoryBytes(), m.memoryBytes(), true);
        over(over, "pids", asked.pids(), m.pids(), false);
        if (asked.cpus() > m.cpus()) {
            over.add("cpus " + asked.cpus() + " > " + m.cpus());
        }
        if (asked.timeout().compareTo(m.timeout()) > 0) {
            over.add("timeoutSeconds " + seconds(asked.timeout()) + " > " + seconds(m.timeout()));
        }
        over(over, "outputLimit", asked.outputBytes(), m.outputBytes(), true);
        over(over, "fileSize", asked.fileSizeBytes(), m.fileSizeBytes(), true);
        over(over, "openFiles", asked.openFiles(), m.openFiles(), false);
        over(over, "disk", asked.diskBytes(), m.diskBytes(), true);
        return over;
    }

    private static void over(List<String> out, String field, long asked, long max, boolean bytes) {
        if (asked > max) {
            out.add(field + " " + (bytes ? Limits.formatBytes(asked) : asked) + " > " + (bytes ? Limits.formatBytes(max) : max));
        }
    }

    static String seconds(Duration d) {
        return d.toMillis() % 1000 == 0 ? String.valueOf(d.toSeconds()) : String.valueOf(d.toMillis() / 1000.0);
    }

    /** {@code asked} with this profile's deny list added: a client may narrow the profile's network, never widen it. */
    public NetworkPolicy keepingDeny(NetworkPolicy asked) {
        if (network.deny().isEmpty() || asked.isNone()) {
            return asked;
        }
        List<String> deny = new ArrayList<>(asked.deny());
        network.deny().stream().filter(d -> !deny.contains(d)).forEach(deny::add);
        return new NetworkPolicy(asked.allow(), deny, asked.ranges(), asked.hosts(), asked.maxConnections(), asked.maxBytes());
    }

    /**
     * What {@code asked} reaches that this profile's network does not: destinations, ranges,
     * static names or budgets beyond it, one line each; empty when it only narrows the profile's.
     */
    public List<String> beyondNetwork(NetworkPolicy asked) {
        List<String> beyond = new ArrayList<>();
        for (Destination d : asked.allow()) {
            if (network.allow().stream().noneMatch(p -> covers(p, d))) {
                beyond.add("destination " + d);
            }
        }
        for (AddressRange r : asked.ranges()) {
            if (network.ranges().stream().noneMatch(p -> p.prefix() <= r.prefix() && p.contains(r.base()))) {
                beyond.add("range " + r);
            }
        }
        for (Map.Entry<String, List<String>> h : asked.hosts().entrySet()) {
            List<String> allowed = network.hosts().get(h.getKey());
            // a static name could point an allowed name at any address: only the profile's own mappings
            if (allowed == null || !allowed.containsAll(h.getValue())) {
                beyond.add("hosts entry " + h.getKey() + " -> " + h.getValue());
            }
        }
        if (network.isNone()) {
            return beyond; // its budgets say nothing more than "no network"
        }
        if (asked.maxConnections() > network.maxConnections()) {
            beyond.add("maxConnections " + asked.maxConnections() + " > " + network.maxConnections());
        }
        if (asked.maxBytes() > network.maxBytes()) {
            beyond.add("maxBytes " + Limits.formatBytes(asked.maxBytes()) + " > " + Limits.formatBytes(network.maxBytes()));
        }
        return beyond;
    }

    private static boolean covers(Destination profile, Destination asked) {
        String p = profile.host();
        String a = asked.host();
        boolean host = p.equals(a) || (p.startsWith("*.") && a.endsWith(p.substring(1)) && a.length() > p.length() - 1);
        boolean ports = profile.ports().isEmpty() || (!asked.ports().isEmpty() && profile.ports().containsAll(asked.ports()));
        return host && ports;
    }
}
