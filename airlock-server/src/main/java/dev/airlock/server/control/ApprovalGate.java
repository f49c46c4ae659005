package dev.airlock.server.control;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Limits;
import dev.airlock.core.Printable;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.ExecSource;
import dev.airlock.server.policy.Approval;
import dev.airlock.server.policy.Profile;

import java.util.List;

/**
 * The profile's {@code approvals}: a create, an execution, or network beyond the profile waits
 * here until a person approves it (REST, CLI, or the MCP client's own user); a denial or no answer
 * in time is a refusal naming the rule. The question says exactly what would happen.
 */
public final class ApprovalGate implements Control {

    /** The most of a command or program a person is shown in the question. */
    static final int SHOWN = 500;
    private final Approvals approvals;

    public ApprovalGate(Approvals approvals) {
        this.approvals = approvals;
    }

    @Override
    public String name() {
        return "approval";
    }

    @Override
    public void check(Admission a) {
        Profile p = a.profile();
        switch (a.command()) {
            case Command.Create c -> {
                Limits l = a.create().limits();
                network(a, null, a.create().beyondProfile());
                await(a, Approval.Trigger.CREATE, null, "create a sandbox with profile '" + p.name() + "' for client '"
                        + a.caller().client().name() + "' (limits: memory " + Limits.formatBytes(l.memoryBytes()) + ", cpus " + l.cpus()
                        + ", pids " + l.pids() + ", timeout " + l.timeout().toSeconds() + " s; network: " + a.create().network().summary() + ")");
            }
            case Command.Exec e -> await(a, Approval.Trigger.EXEC, a.sandboxId(), "run in sandbox " + a.sandboxId() + ": " + shown(e.source(), a));
            case Command.StartProcess s -> await(a, Approval.Trigger.EXEC, a.sandboxId(), "run in sandbox " + a.sandboxId() + ": "
                    + shown(s.source(), a));
            case Command.RunCell r -> await(a, Approval.Trigger.EXEC, a.sandboxId(), "run in context " + Printable.of(r.context())
                    + " of sandbox " + a.sandboxId() + ": " + Printable.of("python code: " + r.code(), SHOWN));
            case Command.UpdateNetwork n -> network(a, a.sandboxId(), a.network().beyondProfile());
            default -> {
            }
        }
    }

    private void network(Admission a, String sandbox, List<String> beyond) {
        if (!beyond.isEmpty()) {
            await(a, Approval.Trigger.NETWORK, sandbox, "let client '" + a.caller().client().name() + "' reach, beyond profile '"
                    + a.profile().name() + "': " + String.join("; ", beyond));
        }
    }

    private void await(Admission a, Approval.Trigger trigger, String sandbox, String summary) {
        Profile p = a.profile();
        if (!p.approvals().contains(trigger)) {
            return;
        }
        String rule = p.rule("approvals") + " (" + trigger.id() + ")";
        try {
            approvals.await(a.caller(), trigger, rule, sandbox, summary);
        } catch (AirlockException e) {
            if (e.kind() != Kind.PERMISSION_DENIED) {
                throw e;
            }
            throw refuse(Kind.PERMISSION_DENIED, p.rule("approvals"), e.getMessage());
        }
    }

    /** What would run, as a person approving it reads it: arguments quoted, or the program's text; cut at {@value #SHOWN} characters. */
    private static String shown(ExecSource source, Admission a) {
        String text = switch (source) {
            case ExecSource.Command c -> String.join(" ", c.argv().stream()
                    .map(arg -> arg.matches("[A-Za-z0-9_./=:-]+") ? arg : "'" + arg.replace("'", "'\\''") + "'").toList());
            case ExecSource.Code c -> a.language().id() + " code: " + c.code();
        };
        return Printable.of(text, SHOWN);
    }
}
