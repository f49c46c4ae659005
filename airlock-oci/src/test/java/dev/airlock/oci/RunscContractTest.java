package dev.airlock.oci;

/**
 * The driver contract, every concern of it, on the OCI driver with runsc: the gVisor tier. Where gVisor
 * gives a control differently (its own kernel, no per-execution cgroups), the contract's cases assert
 * gVisor's behaviour through the driver's hooks; nothing is skipped.
 */
class RunscContractTest extends OciDriverContract {

    RunscContractTest() {
        super("runsc");
    }
}
