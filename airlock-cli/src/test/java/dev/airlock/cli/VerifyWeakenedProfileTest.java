package dev.airlock.cli;

import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriverConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.Set;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code airlock verify --unsafe --unsafe-disable ...} against deliberately weakened sandboxes:
 * verify must notice exactly the controls that were taken away, and nothing else.
 *
 * <p>In the full lane ({@code bin/test --full}): it proves verify itself (that it sees a control
 * taken away); the fast lane runs verify against the default profile.
 */
@Tag("full")
class VerifyWeakenedProfileTest {

    @AfterAll
    static void nothingOfAnySandboxRemains() {
        assertThat(new LeakCheck(OciDriverConfig.defaults()).findOfEndedEngines()).isEmpty();
    }

    @Test
    void withoutSeccompExactlyTheSyscallFilterCasesAreBroken() throws Exception {
        VerifyTestSupport.Report report = VerifyTestSupport.verify("--unsafe", "--unsafe-disable", "seccomp");
        Set<String> filterCases = VerifyTestSupport.builtInCasesOf("syscall-filter");
        assertThat(filterCases).contains("seccomp-filter-installed", "syscall-ptrace", "syscall-mount", "syscall-bpf",
                "syscall-perf-event-open", "syscall-keyctl", "syscall-io-uring", "syscall-kexec-load", "syscall-init-module",
                "syscall-unshare", "syscall-setns", "syscall-process-vm-readv", "socket-netlink", "socket-packet");
        assertThat(report.withStatus("broken")).as("stderr:\n%s", report.stderr()).isEqualTo(filterCases);
        Set<String> rest = new TreeSet<>(VerifyTestSupport.builtInNames());
        rest.removeAll(filterCases);
        assertThat(report.withStatus("held")).isEqualTo(rest);
        assertThat(report.exitCode()).isEqualTo(1);
        assertThat(report.json().get("profile").asString()).isEqualTo("weakened-for-test");
        assertThat(report.stderr()).contains("UNSAFE").contains("NO_SECCOMP");
        assertThat(report.finding("syscall-ptrace").get("remedy").asString()).contains("seccomp");
        assertThat(report.finding("syscall-ptrace").get("happened").asString()).contains("Seccomp: 0");
    }

    @Test
    void inTheHostNetworkNamespaceExactlyTheNetworkCasesAreBroken() throws Exception {
        VerifyTestSupport.Report report = VerifyTestSupport.verify("--unsafe", "--unsafe-disable", "netns");
        Set<String> networkCases = VerifyTestSupport.builtInCasesOf("network-namespace");
        assertThat(networkCases).contains("net-only-loopback", "net-call-outside-host", "net-dns");
        assertThat(report.withStatus("broken")).as("stderr:\n%s", report.stderr()).isEqualTo(networkCases);
        Set<String> rest = new TreeSet<>(VerifyTestSupport.builtInNames());
        rest.removeAll(networkCases);
        assertThat(report.withStatus("held")).isEqualTo(rest);
        assertThat(report.exitCode()).isEqualTo(1);
        assertThat(report.stderr()).contains("UNSAFE").contains("HOST_NETWORK_NAMESPACE");
        assertThat(report.finding("net-only-loopback").get("remedy").asString()).contains("network namespace");
    }

    @Test
    void disablingAControlWithoutUnsafeIsRefused() throws Exception {
        CliProcess cli = CliProcess.run("verify", "--unsafe-disable", "seccomp");
        assertThat(cli.exitCode()).isEqualTo(2);
        assertThat(cli.stderr()).contains("add --unsafe to confirm");
        assertThat(cli.stdout()).isEmpty();
    }

    @Test
    void onlySeccompAndNetnsCanBeDisabled() throws Exception {
        CliProcess cli = CliProcess.run("verify", "--unsafe", "--unsafe-disable", "capabilities");
        assertThat(cli.exitCode()).isEqualTo(2);
        assertThat(cli.stderr()).contains("--unsafe-disable 'capabilities' is not a control verify can disable: use seccomp or netns");
    }
}
