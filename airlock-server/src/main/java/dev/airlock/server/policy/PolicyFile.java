package dev.airlock.server.policy;

import dev.airlock.core.AirlockException;
import dev.airlock.core.YamlField;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Reads a policy file (docs/policy.md). Everything is checked at load: an unknown field, a wrong
 * type, a profile a client names that does not exist, a limit a profile's maximum is below. Every
 * error names the file, the line and the field, such as
 * {@code policy.yaml line 12, profiles.default.limits.memory: ...}.
 *
 * <p>This class reads the document and its top-level fields; each entry of {@code secrets},
 * {@code profiles} and {@code clients} is read by {@link SecretReader}, {@link ProfileReader} and
 * {@link ClientReader}, every value through a {@link YamlField}.
 */
public final class PolicyFile {

    private static final Set<String> TOP = Set.of("version", "approvals", "secrets", "profiles", "clients", "e2b");
    /** An E2B template's name: what E2B's SDKs send (letters, digits, '-', '_', '.', '/', ':'). */
    private static final Pattern TEMPLATE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._/:-]{0,127}");
    /** User-chosen names (profiles, clients, secrets). */
    static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");

    private final String source;
    /** The token file the server makes at its first start, and where to say that it will (null: none such). */
    private final MadeAtStart madeAtStart;

    private PolicyFile(String source, MadeAtStart madeAtStart) {
        this.source = source;
        this.madeAtStart = madeAtStart;
    }

    /**
     * The token file a server makes at its first start ({@code <data-dir>/token}), for a check made
     * before it did: a client whose {@code tokenFile} is this file, missing, is noted in {@code notes}
     * rather than refused.
     */
    public record MadeAtStart(Path file, java.util.List<String> notes) {
    }

    /** Loads and checks {@code file}. */
    public static Policy load(Path file) {
        return load(file, null);
    }

    /**
     * Loads and checks {@code file} for {@code airlock policy check}: a client's {@code tokenFile}
     * that is {@code madeAtStart}'s file and does not exist yet (the data directory's token, which
     * the server makes at its first start) is taken as it will be, and said so in its notes.
     */
    public static Policy load(Path file, MadeAtStart madeAtStart) {
        String text;
        try {
            text = Files.readString(file);
        } catch (IOException e) {
            throw AirlockException.invalid("cannot read the policy file " + file + ": " + e.getMessage());
        }
        return new PolicyFile(file.toString(), madeAtStart).read(text, file.toAbsolutePath().getParent());
    }

    /** Parses policy text; {@code base} resolves relative token files. */
    public static Policy parse(String source, String text, Path base) {
        return new PolicyFile(source, null).read(text, base);
    }

    private Policy read(String text, Path base) {
        YamlField top = YamlField.parse(source, text, "it needs at least 'profiles' and 'clients' (see docs/policy.md)");
        Map<String, YamlField> fields = top.map(TOP);
        if (fields.containsKey("version") && fields.get("version").integer(1, 1) != 1) {
            throw fields.get("version").error("only version 1 exists");
        }
        Duration approvalTimeout = Policy.DEFAULT_APPROVAL_TIMEOUT;
        boolean elicitation = true;
        if (fields.containsKey("approvals")) {
            Map<String, YamlField> a = fields.get("approvals").map(Set.of("timeoutSeconds", "elicitation"));
            if (a.containsKey("timeoutSeconds")) {
                approvalTimeout = Duration.ofSeconds(a.get("timeoutSeconds").integer(1, 86_400));
            }
            if (a.containsKey("elicitation")) {
                elicitation = a.get("elicitation").bool();
            }
        }
        Map<String, SecretSource> secrets = new LinkedHashMap<>();
        if (fields.containsKey("secrets")) {
            fields.get("secrets").named(NAME).forEach((name, y) -> secrets.put(name, SecretReader.read(name, y)));
        }
        YamlField profilesNode = fields.get("profiles");
        if (profilesNode == null) {
            throw top.error("'profiles' is missing: name at least one profile (see docs/policy.md)");
        }
        Map<String, Profile> profiles = new LinkedHashMap<>();
        profilesNode.named(NAME).forEach((name, y) -> profiles.put(name, ProfileReader.read(name, y, secrets)));
        YamlField clientsNode = fields.get("clients");
        if (clientsNode == null) {
            throw top.error("'clients' is missing: name at least one client with its token (see docs/policy.md)");
        }
        Map<String, Client> clients = new LinkedHashMap<>();
        Map<String, String> tokens = new LinkedHashMap<>();
        clientsNode.named(NAME).forEach((name, y) -> {
            Client c = ClientReader.read(name, y, profiles, base, madeAtStart);
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
        Map<String, String> templates = new LinkedHashMap<>();
        if (fields.containsKey("e2b")) {
            YamlField mapped = fields.get("e2b").map(Set.of("templates")).get("templates");
            if (mapped != null) {
                mapped.named(TEMPLATE).forEach((template, y) -> {
                    String profile = y.string();
                    if (!profiles.containsKey(profile)) {
                        throw y.error("E2B template '" + template + "' names profile '" + profile + "', which the policy does not have: it has "
                                + String.join(", ", profiles.keySet()));
                    }
                    templates.put(template, profile);
                });
            }
        }
        return new Policy(source, profiles, clients, secrets, approvalTimeout, elicitation, templates);
    }
}
