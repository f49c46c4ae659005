package dev.airlock.core;

import java.io.IOException;
import java.io.InputStream;

/**
 * The reviewed seccomp allow-list every sandbox runs under, whatever the driver: the data file
 * {@code seccomp-default.json} beside this class (libseccomp's JSON profile format, as OCI runtimes
 * read it, with a comment on every rule). The OCI driver hands it to the runtime; the microVM
 * driver compiles it to a BPF program its guest installs. One file, so no driver can drift from
 * the others.
 */
public final class SeccompAllowList {

    /** The resource's name, beside this class. */
    public static final String RESOURCE = "seccomp-default.json";

    private SeccompAllowList() {
    }

    /** The allow-list's JSON text, to be closed by the caller. */
    public static InputStream open() throws IOException {
        InputStream in = SeccompAllowList.class.getResourceAsStream(RESOURCE);
        if (in == null) {
            throw new IOException("resource " + SeccompAllowList.class.getPackageName().replace('.', '/') + "/" + RESOURCE
                    + " is missing from the class path: the airlock-core jar is incomplete; rebuild it");
        }
        return in;
    }
}
