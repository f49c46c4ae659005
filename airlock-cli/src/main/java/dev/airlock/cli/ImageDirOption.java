package dev.airlock.cli;

import dev.airlock.oci.image.ImageStore;
import picocli.CommandLine.Option;

import java.nio.file.Path;

/** Where the image store is: {@code --image-dir}, else AIRLOCK_IMAGE_DIR, else the data directory's {@code images}. */
final class ImageDirOption {

    @Option(names = "--image-dir", paramLabel = "DIR", description = "The image store (env AIRLOCK_IMAGE_DIR; default"
            + " DATA_DIR/images, that is /var/lib/airlock/images or $AIRLOCK_DATA_DIR/images).")
    Path dir = System.getenv("AIRLOCK_IMAGE_DIR") == null ? null : Path.of(System.getenv("AIRLOCK_IMAGE_DIR"));

    /** The store's directory; {@code dataDir} (null: the default) gives the default. */
    Path resolve(Path dataDir) {
        if (dir != null) {
            return dir;
        }
        if (dataDir != null) {
            return dataDir.resolve("images");
        }
        String env = System.getenv("AIRLOCK_DATA_DIR");
        return env == null ? Path.of(ImageStore.DEFAULT_ROOT) : Path.of(env).resolve("images");
    }
}
