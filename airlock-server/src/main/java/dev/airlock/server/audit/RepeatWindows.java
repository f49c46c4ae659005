package dev.airlock.server.audit;

import dev.airlock.core.Printable;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Requests that can be repeated at will (refusals an outsider can send, a preview link a script
 * hammers, the console's polling), folded per source and window: the first of a window is recorded
 * as it is; the rest only counted, with a few distinct samples (endpoints, destinations); when the
 * window closes, one record carries the count. So a flood adds a constant number of records per
 * window, not one per request. A window lasts the log's window, or what the caller asks (the
 * console's refresh: an hour). Bounded: at most {@link #MAX_SOURCES} open windows (further
 * sources share one), {@link #MAX_SAMPLES} samples each.
 */
final class RepeatWindows {

    /** Open windows at once; a source beyond them is counted in one shared window of its kind. */
    static final int MAX_SOURCES = 1024;
    /** Distinct samples kept per window. */
    static final int MAX_SAMPLES = 16;
    /** Longest sample kept (a destination name, an endpoint), in characters. */
    static final int MAX_SAMPLE_CHARS = 256;

    /** A record to write. */
    record Summary(Instant time, String kind, String actor, String sandbox, Map<String, Object> detail) {
    }

    private static final class Window {
        final Instant start;
        final Duration length;
        final String kind;
        final String actor;
        final String sandbox;
        final Map<String, Object> base;
        final Set<String> samples = new LinkedHashSet<>();
        long repeats;
        long repeatsNotSampled;
        Instant first;
        Instant last;

        Window(Instant start, Duration length, String kind, String actor, String sandbox, Map<String, Object> base) {
            this.start = start;
            this.length = length;
            this.kind = kind;
            this.actor = actor;
            this.sandbox = sandbox;
            this.base = base;
        }

        boolean closedBy(Instant now) {
            return !now.isBefore(start.plus(length));
        }
    }

    private final Duration window;
    private final Map<String, Window> open = new HashMap<>();
    /** Records of windows that closed because their source came again after them, not yet taken. */
    private final List<Summary> pending = new ArrayList<>();

    RepeatWindows(Duration window) {
        this.window = window;
    }

    /**
     * A repeatable request from {@code source}: true when it opens a window (record it in full now),
     * false when it was counted. {@code base} is what the closing record says besides the count (the fields
     * every request of the source shares); {@code sample} is what differs (an endpoint, a destination).
     * A window opened now lasts {@code length} (null: this log's window).
     */
    synchronized boolean admit(String source, Instant now, Duration length, String kind, String actor, String sandbox,
                               Map<String, Object> base, String sample) {
        Duration span = length == null ? window : length;
        String key = kind + "\0" + source;
        Window w = open.get(key);
        if (w == null && open.size() >= MAX_SOURCES) {
            key = kind + "\0*";
            w = open.get(key);
            if (w == null) {
                Map<String, Object> shared = new LinkedHashMap<>(base);
                shared.put("source", "other sources (more than " + MAX_SOURCES + " at once)");
                open.put(key, new Window(now, span, kind, actor, null, shared));
                return true;
            }
        }
        if (w == null || w.closedBy(now)) {
            if (w != null && w.repeats > 0) {
                pending.add(summary(w, now));
            }
            open.put(key, new Window(now, span, kind, actor, sandbox, base));
            return true;
        }
        w.repeats++;
        w.first = w.first == null ? now : w.first;
        w.last = now;
        if (sample != null) {
            String s = Printable.of(sample, MAX_SAMPLE_CHARS); // what a sandbox or an outsider named: printable only
            if (!w.samples.contains(s)) {
                if (w.samples.size() < MAX_SAMPLES) {
                    w.samples.add(s);
                } else {
                    w.repeatsNotSampled++;
                }
            }
        }
        return false;
    }

    /** The records of every window closed by {@code now} (and forgets those windows). */
    synchronized List<Summary> closeDue(Instant now) {
        return close(w -> w.closedBy(now), now);
    }

    /** The records of every open window, closing them all (at shutdown, and for tests). */
    synchronized List<Summary> closeAll(Instant now) {
        return close(w -> true, now);
    }

    private List<Summary> close(Predicate<Window> due, Instant now) {
        List<Summary> out = new ArrayList<>(pending);
        pending.clear();
        for (Iterator<Window> it = open.values().iterator(); it.hasNext(); ) {
            Window w = it.next();
            if (due.test(w)) {
                it.remove();
                if (w.repeats > 0) {
                    out.add(summary(w, now));
                }
            }
        }
        return out;
    }

    synchronized int openWindows() {
        return open.size();
    }

    private Summary summary(Window w, Instant now) {
        Map<String, Object> d = new LinkedHashMap<>(w.base);
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("repeats", w.repeats);
        a.put("windowStart", AuditLog.TIME.format(w.start));
        a.put("windowSeconds", w.length.toSeconds());
        a.put("firstRepeat", AuditLog.TIME.format(w.first));
        a.put("lastRepeat", AuditLog.TIME.format(w.last));
        a.put("samples", List.copyOf(w.samples));
        a.put("repeatsNotSampled", w.repeatsNotSampled);
        d.put("aggregated", a);
        return new Summary(now, w.kind, w.actor, w.sandbox, d);
    }
}
