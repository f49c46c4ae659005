package dev.airlock.core;

/** The outcome of a one-shot run, and the sandbox it ran in (already destroyed). */
public record RunResult(SandboxId sandboxId, ExecResult result) {
}
