/**
 * The web console's door: its pages and assets, and sign-in to a console session (whose cookie the
 * REST door then accepts). Same rule as every door: the command API, policy and the shared helpers only.
 */
package dev.airlock.server.console;
