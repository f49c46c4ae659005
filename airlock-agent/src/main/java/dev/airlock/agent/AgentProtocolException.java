package dev.airlock.agent;

import java.io.IOException;

/** The agent sent something the protocol does not allow; the connection is closed. */
final class AgentProtocolException extends IOException {

    AgentProtocolException(String detail) {
        super("agent protocol violation: " + detail);
    }
}
