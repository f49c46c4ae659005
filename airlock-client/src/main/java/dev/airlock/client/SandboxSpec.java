package dev.airlock.client;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * What to create: image, limits, environment, labels and lifetime. Immutable; build one with
 * {@link #builder()}. Unset fields take the server's defaults, and a spec with nothing set is
 * served from the server's warm pool, which is the fastest start.
 *
 * <p>Label your sandboxes (for example with your application's name and a session id): a crashed
 * client's sandboxes can then be found with {@link Airlock#list(Map)} and removed, and they expire
 * after their {@code ttl} anyway.
 *
 * @param image       image name; null means {@code system}, assembled from the host
 * @param limits      resource budgets; never null ({@link Limits#DEFAULTS} when not set)
 * @param env         environment every execution starts with
 * @param labels      free-form key/value pairs to find sandboxes by
 * @param ttl         time until the sandbox is destroyed (server default 10 min, at most 24 h);
 *                    null for the default
 * @param idleTimeout destroy earlier after this long without a request (server default 5 min);
 *                    null for the default
 * @param profile     the server policy's profile to create with; null for this client's default
 *                    (its first). Limits above the profile's are refused (ForbiddenException).
 */
public record SandboxSpec(
        String image,
        Limits limits,
        Map<String, String> env,
        Map<String, String> labels,
        Duration ttl,
        Duration idleTimeout,
        String profile) {

    /** The longest ttl the server accepts. */
    public static final Duration MAX_TTL = Duration.ofHours(24);

    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    public SandboxSpec {
        if (image != null && image.isBlank()) {
            throw new IllegalArgumentException("image is blank: leave it unset for the default 'system' image");
        }
        limits = limits == null ? Limits.DEFAULTS : limits;
        env = copyEnv(env);
        labels = labels == null ? Map.of() : Map.copyOf(labels);
        labels.forEach((k, v) -> {
            if (k.isBlank() || k.indexOf('=') >= 0) {
                throw new IllegalArgumentException("label key '" + Errors.sanitize(k, 60)
                        + "' must be non-blank and contain no '=' (labels are filtered as key=value)");
            }
        });
        checkSeconds("ttl", ttl);
        if (ttl != null && ttl.compareTo(MAX_TTL) > 0) {
            throw new IllegalArgumentException("ttl " + ttl + " is too long: the server keeps a sandbox at most 24 h");
        }
        checkSeconds("idleTimeout", idleTimeout);
        if (profile != null && profile.isBlank()) {
            throw new IllegalArgumentException("profile is blank: leave it unset for this client's default profile");
        }
    }

    /** A spec with this client's default profile. */
    public SandboxSpec(String image, Limits limits, Map<String, String> env, Map<String, String> labels, Duration ttl, Duration idleTimeout) {
        this(image, limits, env, labels, ttl, idleTimeout, null);
    }

    /** Everything at the server's defaults: a sandbox from the warm pool. */
    public static SandboxSpec defaults() {
        return new SandboxSpec(null, null, null, null, null, null);
    }

    public static Builder builder() {
        return new Builder();
    }

    static Map<String, String> copyEnv(Map<String, String> env) {
        if (env == null) {
            return Map.of();
        }
        Map<String, String> copy = Map.copyOf(env);
        copy.forEach((k, v) -> {
            if (!ENV_NAME.matcher(k).matches()) {
                throw new IllegalArgumentException("environment variable name '" + Errors.sanitize(k, 60)
                        + "' is not valid: use letters, digits and _, not starting with a digit");
            }
            if (v.indexOf('\0') >= 0) {
                throw new IllegalArgumentException("environment variable " + k + " contains a NUL byte");
            }
        });
        return copy;
    }

    private static void checkSeconds(String field, Duration d) {
        if (d != null && d.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new IllegalArgumentException(field + " " + d + " must be at least one second");
        }
    }

    /**
     * Collects a spec. The limit setters ({@link #memory}, {@link #timeout}, ...) are shortcuts for
     * {@link #limits(Limits)}.
     */
    public static final class Builder {
        private String image;
        private String profile;
        private final Limits.Builder limits = Limits.builder();
        private final Map<String, String> env = new LinkedHashMap<>();
        private final Map<String, String> labels = new LinkedHashMap<>();
        private Duration ttl;
        private Duration idleTimeout;

        Builder() {
        }

        public Builder image(String image) { this.image = image; return this; }

        /** The policy profile to create with (the server's policy file names them). */
        public Builder profile(String profile) { this.profile = profile; return this; }

        /** Replaces every limit set so far. */
        public Builder limits(Limits l) {
            Objects.requireNonNull(l, "limits");
            limits.memory(l.memory()).pids(l.pids()).cpus(l.cpus()).timeout(l.timeout())
                    .outputLimit(l.outputLimit()).fileSize(l.fileSize()).openFiles(l.openFiles()).disk(l.disk());
            return this;
        }

        public Builder memory(String size) { limits.memory(size); return this; }
        public Builder pids(int pids) { limits.pids(pids); return this; }
        public Builder cpus(double cpus) { limits.cpus(cpus); return this; }
        /** Wall-clock budget of each execution in this sandbox. */
        public Builder timeout(Duration timeout) { limits.timeout(timeout); return this; }
        public Builder outputLimit(String size) { limits.outputLimit(size); return this; }
        public Builder fileSize(String size) { limits.fileSize(size); return this; }
        public Builder openFiles(int openFiles) { limits.openFiles(openFiles); return this; }
        public Builder disk(String size) { limits.disk(size); return this; }

        public Builder env(String name, String value) {
            env.put(Objects.requireNonNull(name, "env name"), Objects.requireNonNull(value, "env value"));
            return this;
        }

        public Builder env(Map<String, String> vars) { vars.forEach(this::env); return this; }

        public Builder label(String key, String value) {
            labels.put(Objects.requireNonNull(key, "label key"), Objects.requireNonNull(value, "label value"));
            return this;
        }

        public Builder labels(Map<String, String> l) { l.forEach(this::label); return this; }

        public Builder ttl(Duration ttl) { this.ttl = ttl; return this; }
        public Builder idleTimeout(Duration idleTimeout) { this.idleTimeout = idleTimeout; return this; }

        public SandboxSpec build() {
            return new SandboxSpec(image, limits.build(), env, labels, ttl, idleTimeout, profile);
        }
    }
}
