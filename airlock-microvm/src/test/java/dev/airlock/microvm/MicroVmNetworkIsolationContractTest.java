package dev.airlock.microvm;

import dev.airlock.core.contract.NetworkIsolationContract;

/**
 * The driver contract's NetworkIsolation concern alone, on the microVM driver (see
 * {@link MicroVmEgressBridgeContractTest} for why and how).
 */
class MicroVmNetworkIsolationContractTest extends NetworkIsolationContract {
    MicroVmNetworkIsolationContractTest() {
        super(new MicroVmContractTest());
    }
}
