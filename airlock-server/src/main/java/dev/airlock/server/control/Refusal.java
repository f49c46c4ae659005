package dev.airlock.server.control;

import dev.airlock.core.AirlockException.Kind;

/**
 * A command stopped by a control: which control, which rule of the policy (or flag of the server),
 * which class of refusal, and a message that says what to change. Every door renders it the same
 * way: REST as the status of {@code kind} with {@code control} and {@code rule} in the error body,
 * MCP as an {@code isError} result whose text ends with them, the audit log as a deny record that
 * names both.
 *
 * @param control the control's name ({@link Control#name()})
 * @param rule    the policy rule, such as {@code profiles.default.maxLimits}, or the server flag
 */
public record Refusal(String control, String rule, Kind kind, String message) {

    /** This refusal as the exception a command's caller receives. */
    public Refused exception() {
        return new Refused(this);
    }

    /** The suffix every door's text carries: {@code [refused by <control>: <rule>]}. */
    public String tag() {
        return "[refused by " + control + ": " + rule + "]";
    }
}
