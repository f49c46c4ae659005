package dev.airlock.server.wire;

import dev.airlock.core.Limits;

import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;
import java.util.function.Predicate;

/**
 * The limits a request changes, read once from the door's wire format and applied to the
 * profile's defaults when the profile is known. Every door builds one with {@link #read}: it says
 * which names are present and how to read a value of each {@link LimitField.Kind}; the mapping to
 * {@link Limits} is {@link LimitField}'s alone.
 */
public record LimitChanges(Map<LimitField, Number> values) {

    /** No change: the profile's defaults. */
    public static final LimitChanges NONE = new LimitChanges(Map.of());

    public LimitChanges {
        values = Collections.unmodifiableMap(values.isEmpty() ? Map.of() : new EnumMap<>(values));
    }

    /** Reads one value in the door's format, checked as its kind says; null when it is absent or null. */
    @FunctionalInterface
    public interface ValueReader {
        Number read(LimitField field);
    }

    /** The changes whose names are {@code present}, each read by {@code reader}. */
    public static LimitChanges read(Predicate<String> present, ValueReader reader) {
        Map<LimitField, Number> values = new EnumMap<>(LimitField.class);
        for (LimitField f : LimitField.values()) {
            if (present.test(f.wireName())) {
                Number v = reader.read(f);
                if (v != null) {
                    values.put(f, v);
                }
            }
        }
        return new LimitChanges(values);
    }

    /** {@code base} with these changes; throws INVALID naming the limit when one is out of range. */
    public Limits applyTo(Limits base) {
        Limits l = base;
        for (Map.Entry<LimitField, Number> e : values.entrySet()) {
            l = e.getKey().applyTo(l, e.getValue());
        }
        return l;
    }
}
