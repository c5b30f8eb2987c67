package io.fencepost.kafka;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import io.fencepost.BatchOutcome;
import io.fencepost.GuaranteeStatement;
import io.fencepost.Inbound;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionCommand;
import io.fencepost.PartitionContext;
import io.fencepost.PartitionId;
import io.fencepost.PartitionStatus;
import io.fencepost.errors.FencepostException;
import io.fencepost.errors.PartitionFencedException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.pekko.Done;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.sharding.external.ExternalShardAllocation;
import org.apache.pekko.cluster.sharding.external.ExternalShardAllocationStrategy;
import org.apache.pekko.cluster.sharding.external.javadsl.ExternalShardAllocationClient;
import org.apache.pekko.cluster.sharding.typed.ShardingEnvelope;
import org.apache.pekko.cluster.sharding.typed.ShardingMessageExtractor;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.kafka.CommitterSettings;
import org.apache.pekko.kafka.ConsumerMessage;
import org.apache.pekko.kafka.ConsumerSettings;
import org.apache.pekko.kafka.Subscriptions;
import org.apache.pekko.kafka.javadsl.Committer;
import org.apache.pekko.kafka.javadsl.Consumer;
import org.apache.pekko.pattern.Patterns;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Source;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The running pipeline of one node: sharding, consumer stream, per-partition batching. */
final class RunningPipeline<V> implements Pipeline {

  private static final Logger log = LoggerFactory.getLogger(RunningPipeline.class);

  private final ActorSystem<?> system;
  private final PipelineSettings settings;
  private final Deserializer<V> valueDeserializer;
  private final GuaranteeStatement guarantee;
  private final ActorRef<ShardingEnvelope<PartitionCommand>> region;
  private final ExternalShardAllocationClient allocation;
  private final Address self;
  private final Admin admin;
  private final Map<PartitionId, PartitionProgress> assigned = new ConcurrentHashMap<>();
  private Consumer.DrainingControl<Done> control;
  private CompletionStage<Done> stopped;

  /** What this node knows of a partition it consumes. */
  private static final class PartitionProgress {
    final AtomicLong retries = new AtomicLong();
    volatile String lastError = "";
    volatile boolean revoked;
  }

  private RunningPipeline(ActorSystem<?> system, Function<PartitionContext, ? extends PartitionActor<V, ?, ?>> factory,
      Deserializer<V> valueDeserializer, PipelineSettings settings) {
    this.system = system;
    this.settings = settings;
    this.valueDeserializer = valueDeserializer;
    this.guarantee = guarantee(system, settings);
    EntityTypeKey<PartitionCommand> typeKey = EntityTypeKey.create(PartitionCommand.class, "fencepost-" + settings.name());
    this.region = ClusterSharding.get(system).init(
        Entity.of(typeKey, ctx -> PartitionActor.behavior(PartitionId.fromEntityId(ctx.getEntityId()),
                settings.partitionActor(), factory))
            .withMessageExtractor(new OneShardPerPartition())
            .withAllocationStrategy(ExternalShardAllocationStrategy.create(system, typeKey.name(), Duration.ofSeconds(5)))
            .withStopMessage(new PartitionCommand.Stop()));
    this.allocation = ExternalShardAllocation.get(system).getClient(typeKey.name());
    this.self = Cluster.get(system).selfMember().address();
    Properties adminProps = new Properties();
    adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, settings.bootstrapServers());
    settings.kafkaClients().forEach((k, v) -> {
      if (k.startsWith("security.") || k.startsWith("sasl.") || k.startsWith("ssl.")) {
        adminProps.put(k, v);
      }
    });
    this.admin = Admin.create(adminProps);
  }

  static GuaranteeStatement guarantee(ActorSystem<?> system, PipelineSettings settings) {
    String journal = settings.partitionActor().journalPluginId().isEmpty()
        ? system.settings().config().getString("pekko.persistence.journal.plugin")
        : settings.partitionActor().journalPluginId();
    return GuaranteeStatement.of(settings.partitionActor(), "[" + journal + "]");
  }

  static <V> Pipeline start(ActorSystem<?> system, Function<PartitionContext, ? extends PartitionActor<V, ?, ?>> factory,
      Deserializer<V> valueDeserializer, PipelineSettings settings) {
    RunningPipeline<V> p = new RunningPipeline<>(system, factory, valueDeserializer, settings);
    p.run();
    return p;
  }

  /** Shard id = entity id = group|topic|partition: one shard per partition, placed by the Kafka assignment. */
  private static final class OneShardPerPartition
      extends ShardingMessageExtractor<ShardingEnvelope<PartitionCommand>, PartitionCommand> {
    @Override
    public String entityId(ShardingEnvelope<PartitionCommand> envelope) {
      return envelope.entityId();
    }

    @Override
    public String shardId(String entityId) {
      return entityId;
    }

    @Override
    public PartitionCommand unwrapMessage(ShardingEnvelope<PartitionCommand> envelope) {
      return envelope.message();
    }
  }

  private void run() {
    log.info("[{}] starting on [{}], group [{}], topics {}; guarantee: {}", settings.name(), self,
        settings.groupId(), settings.topics(), guarantee.render());
    String isolation = settings.kafkaClients().getOrDefault(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    if (!isolation.equals("read_committed")) {
      log.warn("[{}] kafka-clients.isolation.level is [{}]: records of aborted producer transactions are applied "
          + "as effects; set it to read_committed if any producer of {} uses transactions", settings.name(),
          isolation, settings.topics());
    }
    ConsumerSettings<byte[], byte[]> consumerSettings =
        ConsumerSettings.create(system, new ByteArrayDeserializer(), new ByteArrayDeserializer())
            .withBootstrapServers(settings.bootstrapServers())
            .withGroupId(settings.groupId())
            .withProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false")
            .withProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, settings.autoOffsetReset())
            .withProperty(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed")
            .withProperties(settings.kafkaClients())
            .withStopTimeout(Duration.ZERO);
    CommitterSettings committerSettings = CommitterSettings.create(system)
        .withMaxBatch(settings.commitMaxBatch())
        .withMaxInterval(settings.commitMaxInterval());

    Pair<Consumer.Control, CompletionStage<Done>> pair = Consumer.committablePartitionedManualOffsetSource(
            consumerSettings, Subscriptions.topics(Set.copyOf(settings.topics())), this::onAssign, this::onRevoke)
        .flatMapMerge(Integer.MAX_VALUE / 2, tpAndSource -> partitionFlow(tpAndSource.first(), tpAndSource.second()))
        .toMat(Committer.sink(committerSettings), Keep.both())
        .run(system);
    control = Consumer.createDrainingControl(pair);
    // Leaving the cluster (SIGTERM, ActorSystem.terminate) drains this node's batches first.
    CoordinatedShutdown.get(system).addTask(CoordinatedShutdown.PhaseBeforeServiceUnbind(),
        "fencepost-pipeline-" + settings.name(), this::stop);
    control.streamCompletion().whenComplete((done, error) -> {
      if (error != null) {
        log.error("[{}] consumer stream failed: {}", settings.name(), error.toString(), error);
      }
    });
  }

  private PartitionId partitionId(TopicPartition tp) {
    return new PartitionId(settings.groupId(), tp.topic(), tp.partition());
  }

  /** Moves the shards here, waits until their actors answer from this node, returns their stored offsets. */
  private CompletionStage<Map<TopicPartition, Object>> onAssign(Set<TopicPartition> tps) {
    Map<String, Address> locations = new HashMap<>();
    for (TopicPartition tp : tps) {
      PartitionId id = partitionId(tp);
      assigned.put(id, new PartitionProgress());
      locations.put(id.entityId(), self);
    }
    log.info("[{}] assigned {}", settings.name(), tps);
    Instant deadline = Instant.now().plus(settings.shardHandoffTimeout());
    return allocation.setShardLocations(locations).thenCompose(done -> {
      List<CompletableFuture<Pair<TopicPartition, OptionalLong>>> positions = new ArrayList<>();
      for (TopicPartition tp : tps) {
        positions.add(localPosition(partitionId(tp), deadline).thenApply(o -> Pair.create(tp, o)).toCompletableFuture());
      }
      return CompletableFuture.allOf(positions.toArray(new CompletableFuture[0]))
          .thenCompose(v -> seekTargets(positions.stream().map(CompletableFuture::join).toList()));
    });
  }

  /** Stored offsets, or the auto-offset-reset position for partitions that never stored one. */
  private CompletionStage<Map<TopicPartition, Object>> seekTargets(List<Pair<TopicPartition, OptionalLong>> positions) {
    Map<TopicPartition, Object> out = new HashMap<>();
    Map<TopicPartition, OffsetSpec> unknown = new HashMap<>();
    for (Pair<TopicPartition, OptionalLong> p : positions) {
      if (p.second().isPresent()) {
        out.put(p.first(), p.second().getAsLong());
      } else if (settings.autoOffsetReset().equals("earliest")) {
        out.put(p.first(), 0L);   // below the log start, the consumer's earliest reset takes over
      } else {
        unknown.put(p.first(), OffsetSpec.latest());
      }
    }
    if (unknown.isEmpty()) {
      log.info("[{}] seeking to stored offsets {}", settings.name(), out);
      return CompletableFuture.completedFuture(out);
    }
    return admin.listOffsets(unknown).all().toCompletionStage().thenApply(ends -> {
      ends.forEach((tp, info) -> out.put(tp, info.offset()));
      log.info("[{}] seeking to stored offsets {}", settings.name(), out);
      return out;
    });
  }

  /** Asks the partition's actor until it answers from this node (or the hand-off timeout passes). */
  private CompletionStage<OptionalLong> localPosition(PartitionId id, Instant deadline) {
    // Short probes: while the shard still lives on a crashed node, asks there time out.
    Duration probe = settings.askTimeout().compareTo(Duration.ofSeconds(3)) < 0 ? settings.askTimeout() : Duration.ofSeconds(3);
    return askStatus(id, probe).handle((status, error) -> {
      if (error == null && status.node().equals(self.toString())) {
        return CompletableFuture.completedFuture(status.nextOffset());
      }
      if (Instant.now().isAfter(deadline)) {
        if (error != null) {
          // Without the stored offset we cannot seek safely: fail the assignment, the consumer restarts.
          CompletableFuture<OptionalLong> failed = new CompletableFuture<>();
          failed.completeExceptionally(new IllegalStateException("[" + id.shortName() + "] actor did not answer "
              + "within shard-handoff-timeout " + settings.shardHandoffTimeout() + ": " + error, error));
          return failed;
        }
        log.warn("[{}] shard of [{}] still on [{}] after shard-handoff-timeout {}; consuming anyway (fencing keeps "
            + "the remote actor's writes safe)", settings.name(), id.shortName(), status.node(),
            settings.shardHandoffTimeout());
        return CompletableFuture.completedFuture(status.nextOffset());
      }
      return Patterns.after(Duration.ofMillis(200), system.classicSystem().scheduler(), system.executionContext(),
          () -> localPosition(id, deadline)).toCompletableFuture();
    }).thenCompose(f -> f);
  }

  private void onRevoke(Set<TopicPartition> tps) {
    log.info("[{}] revoked {}", settings.name(), tps);
    for (TopicPartition tp : tps) {
      PartitionProgress progress = assigned.remove(partitionId(tp));
      if (progress != null) {
        progress.revoked = true;
      }
    }
  }

  private Source<ConsumerMessage.CommittableOffset, NotUsed> partitionFlow(TopicPartition tp,
      Source<ConsumerMessage.CommittableMessage<byte[], byte[]>, NotUsed> records) {
    PartitionId id = partitionId(tp);
    PartitionProgress progress = assigned.computeIfAbsent(id, k -> new PartitionProgress());
    return records
        .groupedWithin(settings.maxBatchRecords(), settings.maxBatchLatency())
        .mapAsync(1, batch -> applyUntilDone(id, progress, batch, 0))
        .mapConcat(o -> o.map(List::of).orElse(List.of()));
  }

  /**
   * Sends the batch to its actor until it is applied; never skips it. Stops trying (without
   * committing) once the partition is revoked: the next owner reads the actor's stored offset.
   */
  private CompletionStage<Optional<ConsumerMessage.CommittableOffset>> applyUntilDone(PartitionId id,
      PartitionProgress progress, List<ConsumerMessage.CommittableMessage<byte[], byte[]>> batch, int attempt) {
    List<Inbound<?>> records = new ArrayList<>(batch.size());
    for (ConsumerMessage.CommittableMessage<byte[], byte[]> m : batch) {
      records.add(toInbound(id, m.record()));
    }
    return applyUntilDone(id, progress, batch, records, attempt);
  }

  private CompletionStage<Optional<ConsumerMessage.CommittableOffset>> applyUntilDone(PartitionId id,
      PartitionProgress progress, List<ConsumerMessage.CommittableMessage<byte[], byte[]>> batch,
      List<Inbound<?>> records, int attempt) {
    if (progress.revoked) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    CompletionStage<BatchOutcome> reply = AskPattern.ask(region,
        (ActorRef<BatchOutcome> replyTo) -> new ShardingEnvelope<>(id.entityId(),
            new PartitionCommand.ApplyBatch(records, replyTo)),
        settings.askTimeout(), system.scheduler());
    return reply.handle((outcome, error) -> {
      if (outcome instanceof BatchOutcome.Applied) {
        return CompletableFuture.completedFuture(
            Optional.of(batch.get(batch.size() - 1).committableOffset()));
      }
      String reason;
      if (outcome instanceof BatchOutcome.Rejected rejected) {
        FencepostException e = rejected.error();
        reason = e.getMessage();
        if (e instanceof PartitionFencedException) {
          log.warn("[{}] {}", id.shortName(), reason);
        } else if (!e.isRetriable()) {
          log.error("[{}] batch at offsets [{}..{}] rejected as fatal; the partition retries it and does not move "
              + "on (nothing is skipped): {}", id.shortName(), records.get(0).offset(),
              records.get(records.size() - 1).offset(), reason);
        }
      } else {
        reason = error instanceof TimeoutException || (error != null && error.getCause() instanceof TimeoutException)
            ? "no reply within ask-timeout " + settings.askTimeout() : String.valueOf(error);
      }
      progress.retries.incrementAndGet();
      progress.lastError = reason;
      Duration backoff = backoff(attempt);
      log.warn("[{}] batch at offsets [{}..{}] not applied (attempt {}): {}; resending in {} ms", id.shortName(),
          records.get(0).offset(), records.get(records.size() - 1).offset(), attempt + 1, reason, backoff.toMillis());
      return Patterns.after(backoff, system.classicSystem().scheduler(), system.executionContext(),
          () -> applyUntilDone(id, progress, batch, records, attempt + 1)).toCompletableFuture();
    }).thenCompose(f -> f);
  }

  private Duration backoff(int attempt) {
    long min = settings.retryBackoffMin().toMillis();
    long max = settings.retryBackoffMax().toMillis();
    long exp = min * (1L << Math.min(attempt, 20));
    long capped = Math.min(max, exp);
    long jitter = (long) (capped * 0.2 * ThreadLocalRandom.current().nextDouble());
    return Duration.ofMillis(Math.min(max, capped + jitter));
  }

  private Inbound<V> toInbound(PartitionId id, ConsumerRecord<byte[], byte[]> r) {
    Map<String, byte[]> headers = new HashMap<>();
    for (Header h : r.headers()) {
      headers.put(h.key(), h.value() == null ? new byte[0] : h.value());
    }
    V value = valueDeserializer.deserialize(r.topic(), r.headers(), r.value());
    Optional<String> key = r.key() == null ? Optional.empty()
        : Optional.of(new String(r.key(), java.nio.charset.StandardCharsets.UTF_8));
    return new Inbound<>(id, r.offset(), key, value, headers, Instant.ofEpochMilli(Math.max(0, r.timestamp())));
  }

  private CompletionStage<PartitionStatus> askStatus(PartitionId id, Duration timeout) {
    return AskPattern.ask(region,
        (ActorRef<PartitionStatus> replyTo) -> new ShardingEnvelope<>(id.entityId(),
            new PartitionCommand.GetStatus(replyTo)),
        timeout, system.scheduler());
  }

  @Override
  public String name() {
    return settings.name();
  }

  @Override
  public GuaranteeStatement guarantee() {
    return guarantee;
  }

  @Override
  public CompletionStage<List<PartitionView>> status() {
    List<PartitionId> ids = new ArrayList<>(assigned.keySet());
    Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
    for (PartitionId id : ids) {
      specs.put(new TopicPartition(id.topic(), id.partition()), OffsetSpec.latest());
    }
    CompletionStage<Map<TopicPartition, Long>> ends = admin.listOffsets(specs).all().toCompletionStage()
        .thenApply(m -> {
          Map<TopicPartition, Long> out = new HashMap<>();
          m.forEach((tp, info) -> out.put(tp, info.offset()));
          return out;
        })
        .exceptionally(e -> Map.of());
    List<CompletableFuture<PartitionStatus>> statuses = new ArrayList<>();
    for (PartitionId id : ids) {
      statuses.add(askStatus(id, settings.askTimeout()).toCompletableFuture());
    }
    return ends.thenCompose(endOffsets -> CompletableFuture.allOf(statuses.toArray(new CompletableFuture[0]))
        .handle((v, e) -> {
          List<PartitionView> views = new ArrayList<>();
          for (int i = 0; i < ids.size(); i++) {
            PartitionId id = ids.get(i);
            PartitionProgress progress = assigned.getOrDefault(id, new PartitionProgress());
            PartitionStatus s = statuses.get(i).isCompletedExceptionally() ? null : statuses.get(i).join();
            Long end = endOffsets.get(new TopicPartition(id.topic(), id.partition()));
            OptionalLong next = s == null ? OptionalLong.empty() : s.nextOffset();
            OptionalLong lag = end == null ? OptionalLong.empty() : OptionalLong.of(end - next.orElse(0));
            views.add(new PartitionView(id, s == null ? "?" : s.node(), next, lag,
                s == null ? 0 : s.appliedRecords(), s == null ? 0 : s.droppedByKey(),
                s == null ? 0 : s.droppedRedelivery(), progress.retries.get(), progress.lastError));
          }
          views.sort(java.util.Comparator.comparing((PartitionView pv) -> pv.partition().topic())
              .thenComparingInt(pv -> pv.partition().partition()));
          return views;
        }));
  }

  @Override
  public synchronized CompletionStage<Done> stop() {
    if (stopped != null) {
      return stopped;
    }
    log.info("[{}] stopping: draining in-flight batches", settings.name());
    CompletionStage<Done> drained = control.drainAndShutdown(system.executionContext());
    stopped = drained.toCompletableFuture()
        .completeOnTimeout(Done.getInstance(), settings.drainTimeout().toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)
        .whenComplete((d, e) -> admin.close(Duration.ofSeconds(5)));
    return stopped;
  }
}
