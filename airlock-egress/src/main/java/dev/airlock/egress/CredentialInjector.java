package dev.airlock.egress;

import dev.airlock.core.Credential;

import java.util.List;

/**
 * Sets the credentials bound to a request's destination (by name and port; an IP literal matches
 * none) on the head sent upstream, replacing any header of the same name the sandbox sent, and
 * refuses the requests that would make the origin echo them back.
 */
final class CredentialInjector {

    static final String TRACE_REFUSED = "credential: TRACE refused";

    /** The credentials of one request: empty when none is bound to its destination. */
    record Bound(List<Credential> credentials) {

        List<String> names() {
            return credentials.stream().map(Credential::name).toList();
        }

        /**
         * The head upstream gets: {@code path} (origin-form), the request's end-to-end headers,
         * Host if missing, each credential's header, and {@code Connection: close}.
         */
        byte[] request(HttpHead head, String path, HttpHead.Authority authority, boolean tls) {
            return head.forward(path, authority, tls ? 443 : 80, credentials);
        }
    }

    private final Interception interception;

    CredentialInjector(Interception interception) {
        this.interception = interception;
    }

    /**
     * The credentials for {@code head} to {@code destination}:{@code port}; refused (405, nothing
     * sent) when any is bound and the method would echo the request, the credential with it.
     */
    Bound bind(HttpHead head, String destination, int port) throws EgressRefusal {
        List<Credential> bound = interception.boundTo(destination, port);
        if (!bound.isEmpty() && head.echoesRequest()) {
            throw new EgressRefusal(405, 0, TRACE_REFUSED, head.method() + " would echo the credential back: not sent to a credential's destination",
                    null);
        }
        return new Bound(bound);
    }
}
