package dev.airlock.core;

/**
 * Receives output as the process produces it, before the execution ends. Called from one thread
 * per execution, in order; the byte arrays are not reused by the caller.
 */
public interface OutputListener {

    OutputListener NONE = new OutputListener() { };

    default void stdout(byte[] chunk) { }

    default void stderr(byte[] chunk) { }
}
