package dev.airlock.server.policy;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Credential;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.Secret;
import dev.airlock.core.YamlField;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads one entry of a policy file's {@code secrets}: where the server finds the value (an
 * environment variable or an absolute file, never the value itself), the header it goes in, and
 * the destinations it may be sent to.
 */
final class SecretReader {

    private static final Set<String> FIELDS = Set.of("env", "file", "header", "prefix", "destinations");

    private SecretReader() {
    }

    static SecretSource read(String name, YamlField y) {
        Map<String, YamlField> f = y.map(FIELDS);
        YamlField env = f.get("env");
        YamlField file = f.get("file");
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
        YamlField header = f.get("header");
        YamlField prefix = f.get("prefix");
        YamlField dest = f.get("destinations");
        if (dest == null) {
            throw y.error("'destinations' is missing: a secret is sent only to the destinations it is bound to, such as [\"api.github.com:443\"]");
        }
        List<Destination> destinations = new ArrayList<>();
        for (YamlField d : dest.list()) {
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
            new Credential(name, destinations, h, new Secret("check"));
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
}
