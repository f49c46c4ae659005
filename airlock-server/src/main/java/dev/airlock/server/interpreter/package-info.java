/**
 * Interpreter contexts: Jupyter kernels in a sandbox whose state persists between cells, and the
 * rich results (MIME bundles) of a cell. Used by the service; keeps its kernels as a feature of the
 * live sandbox, never calls the service back.
 */
package dev.airlock.server.interpreter;
