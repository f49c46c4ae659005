package dev.airlock.oci;

import org.junit.jupiter.api.Tag;

/**
 * The driver contract, every concern of it, on the OCI driver with Airlock's own runtime
 * ({@link Launcher}, {@code --runtime airlock}): the container tier without runc. Every control
 * the contract proves under runc it proves here too, by the same cases.
 *
 * <p>{@code bin/test} runs its {@code smoke} cases (the runc contract runs whole there), {@code bin/test
 * --full} every case (CONTRIBUTING.md).
 */
@Tag("tier-contract")
class LauncherContractTest extends OciDriverContract {

    LauncherContractTest() {
        super(Launcher.NAME);
    }
}
