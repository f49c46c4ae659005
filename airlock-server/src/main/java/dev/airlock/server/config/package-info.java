/** What the server was started with ({@code airlock serve}'s options): read by the assembly, the service and the doors. Uses nothing of the server. */
package dev.airlock.server.config;
