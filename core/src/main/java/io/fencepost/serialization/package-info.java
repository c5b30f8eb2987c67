/**
 * Pekko serializers for Fencepost's actor protocol, bound in core's reference.conf so partition
 * commands and replies can cross cluster nodes (an application that addresses partition actors
 * remotely, e.g. through its own Cluster Sharding). Applications never call them directly.
 */
package io.fencepost.serialization;
