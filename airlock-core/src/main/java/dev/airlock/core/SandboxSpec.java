package dev.airlock.core;

import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * What a sandbox is made of: the image its root comes from, its resource budgets, and the
 * environment every execution starts with, and where it may connect (by default nowhere).
 * Validated at construction.
 *
 * <p>{@code workspaceBase}, null but for a sandbox restored from a file snapshot, is a read-only
 * host directory of the snapshot's {@code /workspace} files (made by the server, never named by a
 * client): a driver that {@link IsolationDriver#layersWorkspace() layers} {@code /workspace} makes
 * it the lower layer of an overlay, shared copy-on-write by every such sandbox; others ignore it.
 */
public record SandboxSpec(String image, Limits limits, Map<String, String> env, NetworkPolicy network,
                          List<Input> inputs, List<Credential> credentials, List<RequestApproval> requestApprovals,
                          java.nio.file.Path workspaceBase) {

    public static final String SYSTEM_IMAGE = "system";
    /**
     * E2B's home directory, {@value}: in every image's root a link to {@link #USER_HOME_TARGET}, so that
     * code written for E2B's sandboxes finds its home writable, on the sandbox's disk budget. The agent
     * follows no link when it opens a path (a file command on {@code /home/user/x} is refused), so a door
     * that offers this name turns it into {@code /workspace} itself.
     */
    public static final String USER_HOME = "/home/user";
    /** What {@link #USER_HOME} links to: relative, so that on the host it never leads out of the image's root. */
    public static final String USER_HOME_TARGET = "../workspace";
    /**
     * The host uid and gid that own a {@link #workspaceBase()}'s files and directories: an id no host
     * account uses (useradd stops at 60000, systemd's container ranges end below 1879048192, the OCI
     * driver's sandboxes start at 2000000000), so no one on the host owns a shared tree. A driver maps
     * it to each sandbox's own user (uid 1000 inside every image).
     */
    public static final int WORKSPACE_OWNER = 1_999_999_999;
    /** What an image may be called: 1 to 63 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit. */
    public static final Pattern IMAGE_NAME = Pattern.compile("[a-z0-9][a-z0-9._-]{0,62}");
    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");

    public SandboxSpec {
        if (image == null || image.isBlank()) {
            image = SYSTEM_IMAGE;
        }
        checkImageName(image);
        if (limits == null) {
            limits = Limits.DEFAULTS;
        }
        env = env == null ? Map.of() : Map.copyOf(env);
        validateEnv(env);
        if (network == null) {
            network = NetworkPolicy.NONE;
        }
        inputs = inputs == null ? List.of() : List.copyOf(inputs);
        if (inputs.stream().map(Input::name).distinct().count() != inputs.size()) {
            throw AirlockException.invalid("two inputs have the same name: each input needs its own name");
        }
        credentials = credentials == null ? List.of() : List.copyOf(credentials);
        if (credentials.stream().map(Credential::name).distinct().count() != credentials.size()) {
            throw AirlockException.invalid("two credentials have the same name: each credential needs its own name");
        }
        requestApprovals = requestApprovals == null ? List.of() : List.copyOf(requestApprovals);
    }

    /** A spec with inputs and credentials, and no request approvals. */
    /** Refuses an image name that does not match {@link #IMAGE_NAME}; returns it. */
    public static String checkImageName(String image) {
        if (image == null || !IMAGE_NAME.matcher(image).matches()) {
            throw AirlockException.invalid("image name '" + Printable.of(String.valueOf(image)) + "' is not valid: use 1 to 63 of"
                    + " a-z, 0-9, '.', '_' and '-', starting with a letter or digit");
        }
        return image;
    }

    /** A spec without a workspace base: every sandbox but a restored one. */
    public SandboxSpec(String image, Limits limits, Map<String, String> env, NetworkPolicy network, List<Input> inputs,
                       List<Credential> credentials, List<RequestApproval> requestApprovals) {
        this(image, limits, env, network, inputs, credentials, requestApprovals, null);
    }

    public SandboxSpec(String image, Limits limits, Map<String, String> env, NetworkPolicy network, List<Input> inputs,
                       List<Credential> credentials) {
        this(image, limits, env, network, inputs, credentials, List.of());
    }

    /** A spec without inputs or credentials. */
    public SandboxSpec(String image, Limits limits, Map<String, String> env, NetworkPolicy network) {
        this(image, limits, env, network, List.of(), List.of(), List.of());
    }

    /** A spec without network: the default. */
    public SandboxSpec(String image, Limits limits, Map<String, String> env) {
        this(image, limits, env, NetworkPolicy.NONE);
    }

    public static SandboxSpec defaults() {
        return new SandboxSpec(SYSTEM_IMAGE, Limits.DEFAULTS, Map.of());
    }

    public SandboxSpec withImage(String i) {
        return new SandboxSpec(i, limits, env, network, inputs, credentials, requestApprovals, workspaceBase);
    }

    public SandboxSpec withLimits(Limits l) {
        return new SandboxSpec(image, l, env, network, inputs, credentials, requestApprovals, workspaceBase);
    }

    public SandboxSpec withEnv(Map<String, String> e) {
        return new SandboxSpec(image, limits, e, network, inputs, credentials, requestApprovals, workspaceBase);
    }

    public SandboxSpec withNetwork(NetworkPolicy n) {
        return new SandboxSpec(image, limits, env, n, inputs, credentials, requestApprovals, workspaceBase);
    }

    public SandboxSpec withInputs(List<Input> i) {
        return new SandboxSpec(image, limits, env, network, i, credentials, requestApprovals, workspaceBase);
    }

    public SandboxSpec withRequestApprovals(List<RequestApproval> r) {
        return new SandboxSpec(image, limits, env, network, inputs, credentials, r, workspaceBase);
    }

    public SandboxSpec withCredentials(List<Credential> c) {
        return new SandboxSpec(image, limits, env, network, inputs, c, requestApprovals, workspaceBase);
    }

    /** This spec with {@code /workspace} layered on the read-only host directory {@code base} (see the type's javadoc). */
    public SandboxSpec withWorkspaceBase(java.nio.file.Path base) {
        return new SandboxSpec(image, limits, env, network, inputs, credentials, requestApprovals, base);
    }

    public static void validateEnv(Map<String, String> env) {
        env.forEach((k, v) -> {
            if (!ENV_NAME.matcher(k).matches()) {
                throw AirlockException.invalid("environment variable name '" + Printable.of(k) + "' is not valid: use letters, digits and _, not starting with a digit");
            }
            if (v.indexOf('\0') >= 0) {
                throw AirlockException.invalid("environment variable " + k + " contains a NUL byte"); // k matched ENV_NAME
            }
        });
    }
}
