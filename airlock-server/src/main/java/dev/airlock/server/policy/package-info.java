/** The policy file: clients and their tokens, profiles and their limits, grants and approval rules, secrets. Uses only wire. */
package dev.airlock.server.policy;
