package dev.airlock.cli.verify;

import dev.airlock.cli.verify.Verifier.Outcome;
import dev.airlock.core.AirlockException;
import dev.airlock.core.EndReason;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.OutputListener;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static dev.airlock.cli.verify.RecoveryChecks.cleanUp;
import static dev.airlock.cli.verify.RecoveryChecks.leftovers;
import static dev.airlock.cli.verify.RecoveryChecks.verdict;

/**
 * The killed-agent scenario: the sandbox's PID 1 (the agent) is killed from the host while an
 * execution runs (under gVisor: the sandbox's Sentry, the kernel that runs the agent; on the
 * microVM tier: the guest's QEMU). The execution must end as agent_killed (nobody on the host asked
 * for its end: it is not cancelled), and nothing of the sandbox may remain once it is closed.
 */
final class KilledAgentScenario {

    private KilledAgentScenario() {
    }

    static Outcome run(VerifyTarget target) throws InterruptedException {
        try (Engine engine = new Engine(target.open())) {
            String prefix = "al-" + engine.driver().instance() + "-";
            Sandbox sandbox = engine.create(SandboxSpec.defaults());
            CountDownLatch started = new CountDownLatch(1);
            CompletableFuture<ExecResult> exec = CompletableFuture.supplyAsync(() -> sandbox.exec(
                    ExecRequest.of("sh", "-c", "echo started; sleep 1000 & sleep 1000"), new OutputListener() {
                        @Override
                        public void stdout(byte[] chunk) {
                            started.countDown();
                        }
                    }));
            List<String> problems = new ArrayList<>();
            StringBuilder happened = new StringBuilder();
            try {
                if (!started.await(30, TimeUnit.SECONDS)) {
                    return Outcome.error("the execution did not start within 30s");
                }
                // Under gVisor or in a guest the agent is a process of the sandbox's own kernel, which the host cannot
                // signal alone: kill that kernel.
                VerifyTarget.Tier tier = target.tier();
                String victim = switch (tier) {
                    case CONTAINER -> "the agent";
                    case GVISOR -> "the sandbox's gVisor kernel (runsc-sandbox, which runs the agent)";
                    case MICROVM -> "the sandbox's QEMU (whose guest runs the agent)";
                };
                List<HostProcesses.HostProcess> agents = HostProcesses.inSandboxes(target, sandbox.id().value()).stream()
                        .filter(p -> switch (tier) {
                            // the agent's supervisors of executions run the same binary: PID 1 of the sandbox is the agent
                            case CONTAINER -> p.cmdline().startsWith("/.airlock/airlock-agent") && HostProcesses.namespacePid(p.pid()) == 1;
                            case GVISOR -> p.cmdline().startsWith("runsc-sandbox ");
                            // QEMU itself, not the jail's unshare wrapper whose command line names it
                            case MICROVM -> Path.of(p.cmdline().split(" ", 2)[0]).getFileName().toString().startsWith("qemu-system-");
                        }).toList();
                if (agents.size() != 1) {
                    return Outcome.error("expected one process of " + victim + " of sandbox " + sandbox.id() + " on the host, found: "
                            + HostProcesses.describe(agents));
                }
                long agentPid = agents.getFirst().pid();
                ProcessHandle.of(agentPid).ifPresent(ProcessHandle::destroyForcibly);
                happened.append("killed ").append(victim).append(" (host pid ").append(agentPid).append(") with SIGKILL under a running execution");
                ExecResult r = exec.get(60, TimeUnit.SECONDS);
                happened.append("; the execution ").append(Verifier.observed(r));
                if (r.endReason() != EndReason.AGENT_KILLED) {
                    problems.add("the execution ended " + VerifyCase.label(r.endReason()) + ", expected agent_killed");
                }
            } catch (Exception e) {
                problems.add("the execution did not end within 60s of the agent's death: " + e);
            } finally {
                try {
                    sandbox.close();
                } catch (AirlockException e) {
                    problems.add("closing the sandbox failed: " + e.getMessage());
                }
            }
            if (HostProcesses.eventually(15_000, () -> HostProcesses.inSandboxes(target, prefix).isEmpty())) {
                happened.append("; no process of the sandbox remains");
            } else {
                problems.add("processes remain: " + HostProcesses.describe(HostProcesses.inSandboxes(target, prefix)));
            }
            engine.close();
            problems.addAll(leftovers(target, prefix));
            return verdict(happened.toString(), problems);
        } finally {
            cleanUp(target);
        }
    }
}
