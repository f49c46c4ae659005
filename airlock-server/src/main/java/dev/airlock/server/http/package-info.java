/**
 * What the doors share: the shapes of answers ({@link dev.airlock.server.http.JsonViews}), request
 * bodies read within a bound, console sessions and their CSRF tokens, the local-origin guard,
 * connection and header limits. Uses the command API, policy and wire; never a door, the service or
 * a feature.
 */
package dev.airlock.server.http;
