package dev.airlock.oci;

import org.junit.jupiter.api.Tag;

/**
 * The driver contract, every concern of it, on the OCI driver with runsc: the gVisor tier. Where gVisor
 * gives a control differently (its own kernel, no per-execution cgroups), the contract's cases assert
 * gVisor's behaviour through the driver's hooks; nothing is skipped.
 *
 * <p>A tier's contract: {@code bin/test} runs the cases tagged {@code smoke} (about one per concern, on
 * what is the tier's own: its kernel, file system path, egress bridge, process tree and teardown),
 * {@code bin/test --full} every case (CONTRIBUTING.md).
 */
@Tag("tier-contract")
class RunscContractTest extends OciDriverContract {

    RunscContractTest() {
        super("runsc");
    }
}
