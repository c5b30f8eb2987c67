/**
 * Pekko serializers for Fencepost's actor protocol, bound in core's reference.conf so partition
 * commands and replies can cross cluster nodes (during a shard hand-off). Applications never call
 * them directly.
 */
package io.fencepost.serialization;
