package dev.airlock.cli;

import dev.airlock.microvm.MicroVmDriverConfig;
import dev.airlock.microvm.MicroVmProbe;
import dev.airlock.oci.HostReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.concurrent.Callable;

/** {@code airlock doctor}: what this host supports, and what isolation each driver gives here. */
@Command(name = "doctor", mixinStandardHelpOptions = true,
        description = "Report what this host supports and which isolation each driver would give here: each runtime is proven by"
                + " starting a sandbox in it (microvm: by booting a guest, under KVM within 20 s where /dev/kvm is, else emulated).")
final class DoctorCommand implements Callable<Integer> {

    @Option(names = "--json", description = "Print the report as JSON.")
    boolean json;

    @Mixin
    EngineOptions engineOptions = new EngineOptions();

    @Override
    public Integer call() {
        HostReport report = HostReport.probe(engineOptions.hostCheckConfig())
                .withRuntime(microVm(MicroVmProbe.run(engineOptions.microVmConfig())), engineOptions.runtime);
        System.out.println(json ? report.toJson() : report.toText());
        return report.defaultRuntimeWorks() ? 0 : AirlockCli.EXIT_UNAVAILABLE;
    }

    /** The microVM tier as one runtime line: "works (KVM)", "works (emulated: TCG, slow)", or why not. */
    static HostReport.RuntimeCheck microVm(MicroVmProbe probe) {
        String how = !probe.works() ? "" : MicroVmDriverConfig.KVM.equals(probe.accelerator())
                ? "KVM: give --microvm-accelerator kvm or AIRLOCK_MICROVM_ACCELERATOR=kvm to use it" : "emulated: TCG, slow";
        return new HostReport.RuntimeCheck(EngineOptions.MICROVM, probe.installed(), probe.works(), how, probe.detail(),
                "microVM: a QEMU guest with its own Linux kernel behind a hypervisor, no network device; the host kernel is not shared");
    }
}
