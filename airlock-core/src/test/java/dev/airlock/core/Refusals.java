package dev.airlock.core;

import org.assertj.core.api.ThrowableAssert.ThrowingCallable;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What every refusal of bad input must be: an AirlockException of the named kind whose message is printable and says what was wrong. */
final class Refusals {

    private Refusals() {
    }

    /** {@code call} is refused as {@code kind}, with a one-line printable message containing each of {@code says}. */
    static void refused(AirlockException.Kind kind, ThrowingCallable call, String... says) {
        assertThatThrownBy(call)
                .isInstanceOfSatisfying(AirlockException.class, e -> org.assertj.core.api.Assertions.assertThat(e.kind()).isEqualTo(kind))
                .message().matches("[\\x20-\\x7e]+").contains(says);
    }

    /** {@code call} is refused as invalid input, with a printable message containing each of {@code says}. */
    static void invalid(ThrowingCallable call, String... says) {
        refused(AirlockException.Kind.INVALID_ARGUMENT, call, says);
    }
}
