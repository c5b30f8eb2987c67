package io.fencepost;

import java.util.OptionalLong;

/**
 * A partition actor's stored position and counters.
 *
 * @param nextOffset the next offset to read, empty when the partition never applied a record
 * @param appliedRecords records applied over the partition's whole history (journaled)
 * @param droppedByKey records dropped by business key over the whole history (journaled)
 * @param droppedRedelivery redeliveries dropped by this incarnation since it started (not journaled)
 * @param windowKeys business keys in the window now
 * @param incarnation this incarnation's id
 * @param node the address of the actor system the actor runs in, e.g. {@code pekko://ledger@127.0.0.1:2551}
 * @param deadLettered records dead-lettered over the partition's history (journaled)
 */
public record PartitionStatus(PartitionId partition, OptionalLong nextOffset, long appliedRecords,
    long droppedByKey, long droppedRedelivery, int windowKeys, String incarnation, String node,
    long deadLettered) {
}
