package dev.airlock.oci;

import java.nio.file.Path;
import java.util.List;

/**
 * The root file system a sandbox starts from: a host directory mounted read-only as its root, and
 * the read-only mounts that complete it. Shared by every sandbox of its image; never written.
 */
interface SandboxRoot {

    /** The directory that becomes the sandbox's /, read-only. */
    Path rootfs();

    /** The read-only mounts on top of it, in mount order. */
    List<OciConfig.Mount> mounts();

    /** An image of the store ({@link dev.airlock.oci.image.ImageStore}): its root, and the agent's directory mounted at /.airlock. */
    record Stored(Path rootfs, List<OciConfig.Mount> mounts) implements SandboxRoot {
        static Stored of(Path rootfs, Path agentDir) {
            return new Stored(rootfs, List.of(OciConfig.Mount.bindReadOnly(agentDir, SystemImage.AGENT_DIR)));
        }
    }
}
