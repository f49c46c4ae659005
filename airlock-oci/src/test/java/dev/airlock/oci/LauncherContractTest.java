package dev.airlock.oci;

/**
 * The driver contract, every concern of it, on the OCI driver with Airlock's own runtime
 * ({@link Launcher}, {@code --runtime airlock}): the container tier without runc. Every control
 * the contract proves under runc it proves here too, by the same cases.
 */
class LauncherContractTest extends OciDriverContract {

    LauncherContractTest() {
        super(Launcher.NAME);
    }
}
