package dev.airlock.oci;

import dev.airlock.core.IsolationDriver;
import dev.airlock.core.Limits;
import dev.airlock.core.contract.DriverContract;
import dev.airlock.core.contract.SandboxKernel;

import java.nio.file.Path;
import java.util.List;

/**
 * The driver contract on the OCI driver. The runtime is the one choice a subclass makes, so that
 * running the whole contract on another runtime is one small class (see {@link RuncContractTest}).
 */
abstract class OciDriverContract extends DriverContract {

    private final OciDriverConfig config;

    /** @param runtime the OCI runtime to run every sandbox with: runc, crun or runsc */
    OciDriverContract(String runtime) {
        this(OciDriverConfig.defaults().withRuntime(runtime));
    }

    /** @param config the driver's whole configuration, for a contract run with more than another runtime */
    OciDriverContract(OciDriverConfig config) {
        this.config = config;
    }

    @Override
    protected IsolationDriver newDriver() {
        return new OciDriver(config);
    }

    /** Processes, runtime state, cgroups, host id ranges, mounts and directories, as {@code airlock leaks} finds them. */
    @Override
    protected List<String> leftovers(String sandboxIdPrefix) {
        return new LeakCheck(config).find(sandboxIdPrefix);
    }

    /** gVisor's Sentry under runsc ({@link OciRuntime#isGvisor}), the host's kernel under runc and crun. */
    @Override
    protected SandboxKernel kernel() {
        return OciRuntime.find(config.runtime()).isGvisor() ? SandboxKernel.GVISOR : SandboxKernel.HOST;
    }

    /** One spare execution supervisor where executions get cgroups of their own (CgroupedAgent): runc and crun, not runsc. */
    @Override
    protected int spareSupervisors() {
        return OciRuntime.find(config.runtime()).supportsExecCgroups() ? 1 : 0;
    }

    @Override
    protected Path hostStateDirectory() {
        return config.stateRoot();
    }

    @Override
    protected boolean isSandboxHostUid(long hostUid, int sandboxUid) {
        return isSandboxUid(config, hostUid, sandboxUid);
    }

    @Override
    protected String agentCommandLine(Limits limits) {
        return "/.airlock/airlock-agent\0" + String.join("\0", OciConfig.agentLimitArgs(limits)) + "\0/run/airlock/agent.sock\0";
    }

    /**
     * Whether {@code hostUid} is what sandbox uid {@code sandboxUid} maps to in some sandbox: each
     * sandbox has its own range of 65536 host ids, all above the configured base.
     */
    static boolean isSandboxUid(OciDriverConfig config, long hostUid, int sandboxUid) {
        long base = config.hostIdBase();
        return hostUid >= base && hostUid < UidSlots.end(base) && (hostUid - base) % OciConfig.ID_RANGE == sandboxUid;
    }
}
