package dev.airlock.server.control;

import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.server.command.Command;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.live.SandboxSlots;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Profile;

import java.time.Duration;
import java.util.List;

/**
 * One command on its way through the controls, with what was resolved for it before any control
 * ran: the sandbox it names (visible to the caller), the profile that bounds it, and for a create
 * or a network change the policy it would end with. Controls judge these; they do not resolve
 * them again. What a control holds for the command (a create's sandbox slot) is released when the
 * admission closes, unless the handler took it.
 *
 * @param caller   who sends the command, through which door
 * @param sandbox  the sandbox the command names, or null
 * @param profile  the sandbox's profile; for a create, the one asked for (null: the client may not use it)
 * @param create   for a create whose profile the client may use: what it would create; else null
 * @param network  for a network change: the policy it would set; else null
 * @param language for code: the language it runs in (the sandbox's default when not given); else null
 */
public record Admission(Caller caller, Command<?> command, ManagedSandbox sandbox, Profile profile, CreatePlan create,
                        NetworkPlan network, Language language, Holds holds) implements AutoCloseable {

    /**
     * A create as it would happen: the limits after the client's changes, the lifetimes, the network
     * (the client's, narrowed by the profile's denies) and what of it goes beyond the profile.
     */
    public record CreatePlan(Limits limits, Duration ttl, Duration idleTimeout, NetworkPolicy network, List<String> beyondProfile) {
        public CreatePlan {
            beyondProfile = List.copyOf(beyondProfile);
        }
    }

    /** A network change as it would happen: the policy, narrowed by the profile's denies, and what goes beyond the profile. */
    public record NetworkPlan(NetworkPolicy narrowed, List<String> beyondProfile) {
        public NetworkPlan {
            beyondProfile = List.copyOf(beyondProfile);
        }
    }

    /** What controls hold for a command until its handler takes it or the command ends. */
    public static final class Holds {
        private SandboxSlots.Slot slot;

        /** Holds a create's sandbox slot. */
        public void slot(SandboxSlots.Slot held) {
            if (slot != null) {
                throw new IllegalStateException("a command holds one slot");
            }
            slot = held;
        }

        /** The held slot, or null. */
        public SandboxSlots.Slot slot() {
            return slot;
        }

        /** The handler keeps the slot from now on: closing the admission no longer releases it. */
        public SandboxSlots.Slot takeSlot() {
            SandboxSlots.Slot taken = slot;
            slot = null;
            return taken;
        }
    }

    /** The sandbox's id, or null: where the audit log files the command's records. */
    public String sandboxId() {
        return sandbox == null ? null : sandbox.id();
    }

    /** Releases what a control held and the handler did not take. */
    @Override
    public void close() {
        SandboxSlots.Slot left = holds.takeSlot();
        if (left != null) {
            left.release();
        }
    }
}
