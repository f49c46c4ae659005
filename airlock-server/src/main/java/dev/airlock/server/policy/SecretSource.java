package dev.airlock.server.policy;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Credential;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.Secret;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Where a secret's value comes from: an environment variable of the server or a file on its host,
 * read when a sandbox that uses it is created, so a rotated secret needs no restart. The policy
 * file names only the source, never the value.
 *
 * @param prefix put before the value in the header, such as {@code "Bearer "}
 */
public record SecretSource(String name, String env, Path file, String header, String prefix, List<Destination> destinations) {

    public SecretSource {
        destinations = List.copyOf(destinations);
    }

    /** The credential with its current value. */
    public Credential resolve() {
        String value;
        if (env != null) {
            value = System.getenv(env);
            if (value == null || value.isEmpty()) {
                throw AirlockException.unavailable("secret '" + name + "' comes from environment variable " + env
                        + ", which the server's environment does not set: set it and restart the server, or change secrets." + name);
            }
        } else {
            try {
                value = Files.readString(file).strip();
            } catch (IOException e) {
                throw AirlockException.unavailable("secret '" + name + "' comes from file " + file + ", which cannot be read ("
                        + e.getClass().getSimpleName() + "): create it, or change secrets." + name);
            }
        }
        return new Credential(name, destinations, header, new Secret(prefix + value));
    }
}
