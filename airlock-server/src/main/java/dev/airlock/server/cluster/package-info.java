/**
 * This server as a node of a cluster on PostgreSQL (docs/cluster.md): its row in the nodes table,
 * its heartbeat, and the cluster's list of nodes. What everything stands on: it uses the
 * configuration and the command API's views, nothing of the service or the doors.
 */
package dev.airlock.server.cluster;
