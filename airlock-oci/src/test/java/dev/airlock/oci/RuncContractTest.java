package dev.airlock.oci;

/** The driver contract, every concern of it, on the OCI driver with runc: the container tier. */
class RuncContractTest extends OciDriverContract {

    RuncContractTest() {
        super("runc");
    }
}
