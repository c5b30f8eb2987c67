package io.fencepost.kafka.internal;

import java.util.List;
import java.util.Objects;

import io.fencepost.PartitionId;
import io.fencepost.annotation.InternalApi;
import org.apache.pekko.actor.typed.ActorRef;

/** INTERNAL API: asks one node's pipeline for the views of the partitions it consumes. */
@InternalApi
public record StatusRequest(ActorRef<Reply> replyTo) {

  public StatusRequest {
    Objects.requireNonNull(replyTo, "replyTo");
  }

  /** One node's answer: its address and its partitions' rows. */
  public record Reply(String node, List<Row> rows) {
    public Reply {
      Objects.requireNonNull(node, "node");
      rows = List.copyOf(rows);
    }
  }

  /**
   * One partition as its node reports it (the fields of {@code PartitionView}; {@link Long#MIN_VALUE}
   * for an unknown next offset or lag).
   */
  public record Row(PartitionId partition, String ownerNode, long nextOffset, long lag, long appliedRecords,
      long droppedByKey, long droppedRedelivery, long deadLettered, long retries, String lastError, String halted) {
    public Row {
      Objects.requireNonNull(partition, "partition");
      Objects.requireNonNull(ownerNode, "ownerNode");
      Objects.requireNonNull(lastError, "lastError");
      Objects.requireNonNull(halted, "halted");
    }
  }
}
