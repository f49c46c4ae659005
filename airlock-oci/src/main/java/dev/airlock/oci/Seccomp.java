package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.SeccompAllowList;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.InputStream;

/**
 * The seccomp allow-list, kept as a reviewed data file ({@link SeccompAllowList}, shared with the
 * microVM driver) with a comment on every rule, turned into the OCI {@code linux.seccomp} section for this host's
 * architecture. Only the native architecture is listed, so 32-bit and x32 system calls, whose
 * numbers differ, are refused by the filter's architecture check instead of slipping past it.
 */
final class Seccomp {

    private Seccomp() {
    }

    static ObjectNode defaultProfile() {
        JsonMapper json = JsonMapper.builder().build();
        ObjectNode profile;
        try (InputStream in = SeccompAllowList.open()) {
            profile = (ObjectNode) json.readTree(in);
        } catch (IOException e) {
            throw AirlockException.internal("cannot load the seccomp profile: " + e.getMessage(), e);
        }
        profile.remove("comment");
        for (JsonNode rule : profile.get("syscalls")) {
            ((ObjectNode) rule).remove("comment");
        }
        profile.putArray("architectures").add(nativeArchitecture());
        return profile;
    }

    private static String nativeArchitecture() {
        String arch = System.getProperty("os.arch");
        return switch (arch) {
            case "amd64", "x86_64" -> "SCMP_ARCH_X86_64";
            case "aarch64", "arm64" -> "SCMP_ARCH_AARCH64";
            default -> throw AirlockException.unavailable("no seccomp profile for architecture " + arch
                    + ": Airlock's seccomp filter supports x86_64 and aarch64");
        };
    }
}
