package io.fencepost.kafka;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

import io.fencepost.PartitionCommand;
import io.fencepost.PartitionId;
import io.fencepost.PartitionStatus;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.pekko.Done;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.sharding.external.javadsl.ExternalShardAllocationClient;
import org.apache.pekko.cluster.sharding.typed.ShardingEnvelope;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Places a partition's shard where Kafka assigned the partition and finds where its stream must
 * start: moves the shard to this node, asks the partition's actor until it answers from here (or
 * {@code shard-handoff-timeout} passes: then records flow to wherever the shard lives, and the
 * journal's fence, not this wait, keeps that safe), and turns its stored offset into a seek target.
 */
final class ShardPlacement {

  private static final Logger log = LoggerFactory.getLogger(ShardPlacement.class);

  private final ActorSystem<?> system;
  private final PipelineSettings settings;
  private final ActorRef<ShardingEnvelope<PartitionCommand>> region;
  private final ExternalShardAllocationClient allocation;
  private final Admin admin;
  private final Address self;
  private final AtomicLong handoffTimeouts = new AtomicLong();

  ShardPlacement(ActorSystem<?> system, PipelineSettings settings, ActorRef<ShardingEnvelope<PartitionCommand>> region,
      ExternalShardAllocationClient allocation, Admin admin, Address self) {
    this.system = system;
    this.settings = settings;
    this.region = region;
    this.allocation = allocation;
    this.admin = admin;
    this.self = self;
  }

  /** Records this node as the home of the partitions' shards (sharding moves them at its next rebalance). */
  CompletionStage<Done> claim(Set<PartitionId> ids) {
    Map<String, Address> locations = new HashMap<>();
    ids.forEach(id -> locations.put(id.entityId(), self));
    return allocation.setShardLocations(locations);
  }

  /**
   * Where the partition's stream starts: its actor's stored offset once the actor answers from this
   * node (see the class comment), or the auto-offset-reset position for a partition that never stored
   * one. Reads the log start into {@code progress}. Fails with {@link CancellationException} as soon
   * as {@code wanted} turns false.
   */
  CompletionStage<Long> seekTarget(PartitionId id, PartitionProgress progress, BooleanSupplier wanted) {
    Instant deadline = Instant.now().plus(settings.shardHandoffTimeout());
    return localPosition(id, deadline, wanted).thenCompose(stored -> target(id, progress, stored));
  }

  /** Asks the partition's actor until it answers from this node (or the hand-off timeout passes). */
  private CompletionStage<OptionalLong> localPosition(PartitionId id, Instant deadline, BooleanSupplier wanted) {
    if (!wanted.getAsBoolean()) {
      return CompletableFuture.failedFuture(new CancellationException("revoked"));
    }
    // Short probes: while the shard still lives on a crashed node, asks there time out.
    Duration probe = settings.askTimeout().compareTo(Duration.ofSeconds(3)) < 0 ? settings.askTimeout()
        : Duration.ofSeconds(3);
    return askStatus(id, probe).handle((status, error) -> {
      if (error == null && status.node().equals(self.toString())) {
        return CompletableFuture.completedFuture(status.nextOffset());
      }
      if (Instant.now().isAfter(deadline)) {
        if (error != null) {
          // Without the stored offset there is no safe seek: keep asking (the partition stays paused).
          log.warn("[{}] actor of [{}] has not answered for {} (shard-handoff-timeout passed): {}; still asking",
              settings.name(), id.shortName(), settings.shardHandoffTimeout(), error.toString());
          return Backoff.after(system, Duration.ofSeconds(1),
              () -> localPosition(id, Instant.now().plus(Duration.ofSeconds(5)), wanted));
        }
        handoffTimeouts.incrementAndGet();
        log.warn("[{}] shard of [{}] still on [{}] after shard-handoff-timeout {}; consuming anyway (fencing keeps "
            + "the remote actor's writes safe; hand-off timeouts on this node: {})", settings.name(), id.shortName(),
            status.node(), settings.shardHandoffTimeout(), handoffTimeouts.get());
        return CompletableFuture.completedFuture(status.nextOffset());
      }
      return Backoff.after(system, Duration.ofMillis(100), () -> localPosition(id, deadline, wanted));
    }).thenCompose(f -> f);
  }

  /**
   * The stored offset, or the auto-offset-reset position for a partition that never stored one. A
   * stored offset below the log start (retention deleted records nobody applied) seeks to the log
   * start, so that {@code auto-offset-reset = latest} cannot skip the records that are still there.
   */
  private CompletionStage<Long> target(PartitionId id, PartitionProgress progress, OptionalLong stored) {
    TopicPartition tp = new TopicPartition(id.topic(), id.partition());
    if (stored.isEmpty() && settings.autoOffsetReset().equals("latest")) {
      return listOffset(tp, OffsetSpec.latest());
    }
    return listOffset(tp, OffsetSpec.earliest()).handle((start, error) -> {
      if (error != null) {
        // Without the log start the stored offset still is the safe target (and 0 resets to it).
        log.warn("[{}] could not read the log start offset of {}: {}", settings.name(), tp, error.toString());
        return stored.orElse(0);
      }
      progress.logStart = start;
      if (stored.isEmpty()) {
        return start;
      }
      long next = stored.getAsLong();
      if (start > next) {
        log.error("[{}] {}: stored next offset {} is below the log start {}: records [{}..{}] were deleted by "
            + "retention before they were applied; seeking to the log start", settings.name(), tp, next, start,
            next, start - 1);
        return start;
      }
      return next;
    });
  }

  private CompletionStage<Long> listOffset(TopicPartition tp, OffsetSpec spec) {
    return admin.listOffsets(Map.of(tp, spec)).partitionResult(tp).toCompletionStage().thenApply(info -> info.offset());
  }

  CompletionStage<PartitionStatus> askStatus(PartitionId id, Duration timeout) {
    return AskPattern.ask(region,
        (ActorRef<PartitionStatus> replyTo) -> new ShardingEnvelope<>(id.entityId(),
            new PartitionCommand.GetStatus(replyTo)),
        timeout, system.scheduler());
  }
}
