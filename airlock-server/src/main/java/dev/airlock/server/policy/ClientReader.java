package dev.airlock.server.policy;

import dev.airlock.core.YamlField;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Reads one entry of a policy file's {@code clients}: its token (as a SHA-256, or a token file),
 * the profiles it may use, what it may call, and its quotas.
 */
final class ClientReader {

    private static final Set<String> FIELDS = Set.of("tokenSha256", "tokenFile", "profiles", "allow", "quotas");
    private static final Set<String> QUOTAS = Set.of("sandboxes", "executionsPerMinute", "snapshotMiB");
    private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");

    private ClientReader() {
    }

    /**
     * @param profiles the policy's profiles, which the client's must be among
     * @param base     resolves a relative token file; null to take it as given
     */
    static Client read(String name, YamlField y, Map<String, Profile> profiles, Path base, PolicyFile.MadeAtStart madeAtStart) {
        Map<String, YamlField> f = y.map(FIELDS);
        byte[] hash = tokenHash(name, y, f.get("tokenSha256"), f.get("tokenFile"), base, madeAtStart);
        List<String> allowedProfiles = new ArrayList<>();
        YamlField ps = f.get("profiles");
        if (ps == null) {
            throw y.error("'profiles' is missing: list the profiles this client may create sandboxes with (the first is its default)");
        }
        for (YamlField p : ps.list()) {
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
        YamlField allow = f.get("allow");
        if (allow == null) {
            throw y.error("'allow' is missing: list what this client may call (" + Operation.names() + "), or [\"*\"] for everything but sandbox.any");
        }
        for (YamlField o : allow.list()) {
            String op = o.string();
            if (op.equals("*")) {
                operations.addAll(Operation.all());
            } else {
                operations.add(o.check(() -> Operation.parse(op)));
            }
        }
        int sandboxes = 0;
        int perMinute = 0;
        long snapshotBytes = Client.DEFAULT_SNAPSHOT_BYTES;
        if (f.containsKey("quotas")) {
            Map<String, YamlField> q = f.get("quotas").map(QUOTAS);
            if (q.containsKey("sandboxes")) sandboxes = (int) q.get("sandboxes").integer(1, 100_000);
            if (q.containsKey("executionsPerMinute")) perMinute = (int) q.get("executionsPerMinute").integer(1, 1_000_000);
            if (q.containsKey("snapshotMiB")) snapshotBytes = q.get("snapshotMiB").integer(0, 1L << 20) << 20;
        }
        return new Client(name, hash, allowedProfiles, operations, sandboxes, perMinute, snapshotBytes);
    }

    /** The SHA-256 of the client's token, from exactly one of {@code sha} and {@code file}. */
    private static byte[] tokenHash(String client, YamlField y, YamlField sha, YamlField file, Path base, PolicyFile.MadeAtStart madeAtStart) {
        if ((sha == null) == (file == null)) {
            throw y.error("give exactly one of 'tokenSha256' (the SHA-256 of the client's token, from 'airlock policy token') or 'tokenFile'"
                    + " (a file holding the token, readable only by its owner)");
        }
        if (sha != null) {
            String hex = sha.string().toLowerCase(Locale.ROOT);
            if (!SHA256.matcher(hex).matches()) {
                throw sha.error("not a SHA-256 in hex (64 characters 0-9a-f): make one with 'airlock policy token'");
            }
            return HexFormat.of().parseHex(hex);
        }
        Path p = base == null ? Path.of(file.string()) : base.resolve(file.string());
        if (madeAtStart != null && !java.nio.file.Files.exists(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)
                && p.toAbsolutePath().normalize().equals(madeAtStart.file().toAbsolutePath().normalize())) {
            madeAtStart.notes().add("client '" + client + "': its tokenFile " + p + " does not exist yet; the server makes it when it first"
                    + " starts with that data directory");
            return Policy.sha256("not yet made: " + p.toAbsolutePath().normalize()); // stands for the token to come, unique per file
        }
        return file.check(() -> Policy.sha256(TokenFile.read(p)));
    }
}
