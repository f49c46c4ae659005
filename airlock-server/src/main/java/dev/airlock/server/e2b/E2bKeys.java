package dev.airlock.server.e2b;

import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Policy;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The E2B door's credentials. An E2B API key is a client's token in E2B's form: {@code e2b_}
 * followed by what follows {@code alk_} in the token (or by the whole token, for a token without
 * that prefix), so the SDKs' own check of the key's form passes and the policy's clients need
 * nothing new. A sandbox's envd access token, which the SDKs send instead of the key to the
 * sandbox's daemon, is an HMAC of the client and the sandbox under a key drawn when the server
 * starts: nothing to store, nothing to bound, and it names the client that may use it.
 */
final class E2bKeys {

    static final String KEY_PREFIX = "e2b_";
    private static final String TOKEN_PREFIX = "alk_";

    private final Supplier<Policy> policy;
    private final byte[] key = new byte[32];

    /** {@code key}: the access tokens' key, or null for one drawn now. */
    E2bKeys(Supplier<Policy> policy, byte[] key) {
        this.policy = policy;
        if (key == null) {
            new SecureRandom().nextBytes(this.key);
        } else {
            System.arraycopy(key, 0, this.key, 0, this.key.length);
        }
    }

    /** The E2B API key of an Airlock token. */
    static String apiKey(String token) {
        return KEY_PREFIX + (token.startsWith(TOKEN_PREFIX) ? token.substring(TOKEN_PREFIX.length()) : token);
    }

    /** The client whose token this E2B API key is, if any. */
    Optional<Client> client(String apiKey) {
        if (apiKey == null || !apiKey.startsWith(KEY_PREFIX) || apiKey.length() == KEY_PREFIX.length()) {
            return Optional.empty();
        }
        String rest = apiKey.substring(KEY_PREFIX.length()).trim();
        // both forms are tried, always, so the time taken says nothing about which one a client has
        Optional<Client> prefixed = policy.get().authenticate("Bearer " + TOKEN_PREFIX + rest);
        Optional<Client> plain = policy.get().authenticate("Bearer " + rest);
        return prefixed.isPresent() ? prefixed : plain;
    }

    /** The envd access token of {@code sandbox} for {@code client}. */
    String accessToken(Client client, String sandbox) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(mac(client.name(), sandbox));
    }

    /** The client whose access token to {@code sandbox} {@code token} is, if any (every client compared, in constant time each). */
    Optional<Client> clientOfAccessToken(String sandbox, String token) {
        if (token == null || sandbox == null) {
            return Optional.empty();
        }
        byte[] offered = token.getBytes(StandardCharsets.US_ASCII);
        Client found = null;
        for (Client c : policy.get().clients().values()) {
            if (MessageDigest.isEqual(offered, accessToken(c, sandbox).getBytes(StandardCharsets.US_ASCII))) {
                found = c;
            }
        }
        return Optional.ofNullable(found);
    }

    private byte[] mac(String client, String sandbox) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update(client.getBytes(StandardCharsets.UTF_8));
            mac.update((byte) 0);
            return mac.doFinal(sandbox.getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JVM", e);
        }
    }
}
