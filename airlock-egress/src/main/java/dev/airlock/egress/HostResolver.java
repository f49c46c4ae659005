package dev.airlock.egress;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;

/** Resolves a name to addresses on the host (never inside the sandbox). */
@FunctionalInterface
public interface HostResolver {

    List<InetAddress> resolve(String name) throws UnknownHostException;

    /** The host's system resolver. */
    HostResolver SYSTEM = name -> List.of(InetAddress.getAllByName(name));

    /** Resolves nothing: for tests and for hosts that must only use a policy's name map. */
    HostResolver NONE = name -> {
        throw new UnknownHostException(name + ": no resolver");
    };
}
