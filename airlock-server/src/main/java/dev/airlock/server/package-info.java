/**
 * The assembly: builds the server from its parts. {@link dev.airlock.server.SandboxRuntime} opens
 * the policy, the audit log, the store and one engine per tier and makes the sandbox service;
 * {@link dev.airlock.server.AirlockServer} mounts the doors on Jetty. It may use every package;
 * none may use it (ArchitectureTest).
 */
package dev.airlock.server;
