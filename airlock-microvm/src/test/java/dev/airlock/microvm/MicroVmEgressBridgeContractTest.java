package dev.airlock.microvm;

import dev.airlock.core.contract.EgressBridgeContract;

/**
 * The driver contract's EgressBridge concern alone, on the microVM driver: surefire cannot select one
 * nested concern of {@link MicroVmContractTest} (they are DriverContract's nested classes), and the
 * whole contract boots a guest per case. On demand, like it:
 * {@code mvn -pl airlock-microvm -am test -Dtest=MicroVmEgressBridgeContractTest}.
 */
class MicroVmEgressBridgeContractTest extends EgressBridgeContract {
    MicroVmEgressBridgeContractTest() {
        super(new MicroVmContractTest());
    }
}
