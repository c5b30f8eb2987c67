package io.fencepost.kafka.internal;

import java.util.List;
import java.util.Objects;

import io.fencepost.annotation.InternalApi;
import io.fencepost.kafka.PartitionView;
import org.apache.pekko.actor.typed.ActorRef;

/** INTERNAL API: asks one node's pipeline for the views of the partitions it consumes. */
@InternalApi
public record StatusRequest(ActorRef<Reply> replyTo) {

  public StatusRequest {
    Objects.requireNonNull(replyTo, "replyTo");
  }

  /** One node's answer: its address and its partitions' views. */
  public record Reply(String node, List<PartitionView> views) {
    public Reply {
      Objects.requireNonNull(node, "node");
      views = List.copyOf(views);
    }
  }
}
