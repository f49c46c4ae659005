package dev.airlock.egress;

/** Receives every egress record; called from the proxy's connection threads, must not block long. */
@FunctionalInterface
public interface EgressListener {

    void record(EgressRecord record);

    EgressListener NONE = r -> {
    };
}
