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
import io.fencepost.DeadLetter;
import io.fencepost.GuaranteeStatement;
import io.fencepost.Inbound;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionCommand;
import io.fencepost.PartitionContext;
import io.fencepost.PartitionId;
import io.fencepost.PartitionStatus;
import io.fencepost.errors.HandlerFailedException;
import io.fencepost.errors.OffsetGapException;
import io.fencepost.errors.RecordsParkedException;
import io.fencepost.errors.SettingsException;
import io.fencepost.kafka.internal.DeadLetterHeaders;
import io.fencepost.kafka.internal.LogProbe;
import io.fencepost.kafka.internal.ProducerSafety;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArraySerializer;
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
  private final KafkaProducer<byte[], byte[]> deadLetterProducer;
  private final Map<String, Integer> deadLetterPartitions = new ConcurrentHashMap<>();
  private final Map<PartitionId, PartitionProgress> assigned = new ConcurrentHashMap<>();
  private final KafkaProducer<byte[], byte[]> outboxProducer;
  private final LogProbe logProbe;
  private final java.util.concurrent.Executor blocking;
  // Streams of one partition running at once on this node: more than one means the consumer
  // split a partition's records between streams (overlapping rebalances); see partitionFlow.
  private final Map<TopicPartition, java.util.concurrent.atomic.AtomicInteger> liveStreams = new ConcurrentHashMap<>();
  private final Map<PartitionId, ActorRef<OutboxRelay.Command>> relays = new ConcurrentHashMap<>();
  private final AtomicLong relaysStarted = new AtomicLong();
  private final java.util.concurrent.atomic.AtomicBoolean outboxOffWarned = new java.util.concurrent.atomic.AtomicBoolean();
  private volatile Consumer.DrainingControl<Done> control;
  private volatile CompletionStage<Done> stopped;
  private volatile org.apache.pekko.actor.Cancellable watchdog;
  // end offsets at the last watchdog restart: restart again only when new records arrived since
  private final Map<TopicPartition, Long> restartedAtEnd = new ConcurrentHashMap<>();

  /** What this node knows of a partition it consumes. */
  private static final class PartitionProgress {
    final AtomicLong retries = new AtomicLong();
    volatile String lastError = "";
    volatile boolean revoked;
    volatile boolean inFlight;
    volatile long lastProgressNanos = System.nanoTime();
    volatile long knownNextOffset = -1;
    // The log start offset read at assignment (-1: unknown); it only grows, so no readable record
    // lies below it later either.
    volatile long logStart = -1;
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
    this.deadLetterProducer = new KafkaProducer<>(ProducerSafety.safeProperties(settings.bootstrapServers(),
        settings.deadLetterProducer(), "fencepost.pipelines." + settings.name() + ".dead-letter.producer-kafka-clients"),
        new ByteArraySerializer(), new ByteArraySerializer());
    this.outboxProducer = settings.outbox().enabled()
        ? new KafkaProducer<>(ProducerSafety.safeProperties(settings.bootstrapServers(), settings.outbox().producer(),
            "fencepost.pipelines." + settings.name() + ".outbox.producer-kafka-clients"),
            new ByteArraySerializer(), new ByteArraySerializer())
        : null;
    this.logProbe = new LogProbe(settings.bootstrapServers(), settings.kafkaClients());
    this.blocking = system.dispatchers().lookup(org.apache.pekko.actor.typed.DispatcherSelector.blocking());
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
    try {
      p.checkTopics();
    } catch (RuntimeException e) {
      p.closeClients();
      throw e;
    }
    log.info("[{}] starting on [{}], group [{}], topics {}; guarantee: {}", settings.name(), p.self,
        settings.groupId(), settings.topics(), p.guarantee.render());
    // Leaving the cluster (SIGTERM, ActorSystem.terminate) drains this node's batches first.
    CoordinatedShutdown.get(system).addTask(CoordinatedShutdown.PhaseBeforeServiceUnbind(),
        "fencepost-pipeline-" + settings.name(), p::stop);
    synchronized (p) {
      p.run();
    }
    p.startWatchdog();
    return p;
  }

  /**
   * A partition that is assigned, has records to read, no batch in flight and no progress for
   * {@code stall-timeout} is stuck in the consumer (seen after overlapping rebalances): restart the
   * consumer, whose partitions then seek to their actors' offsets again. Never silently stalled.
   */
  private void startWatchdog() {
    Duration every = Duration.ofSeconds(Math.max(1, settings.stallTimeout().toSeconds() / 4));
    watchdog = system.scheduler().scheduleWithFixedDelay(every, every, () -> {
      try {
        checkStalls();
      } catch (RuntimeException e) {
        log.debug("[{}] stall check failed: {}", settings.name(), e.toString());
      }
    }, system.executionContext());
  }

  private void checkStalls() {
    if (stopped != null) {
      return;
    }
    long now = System.nanoTime();
    Map<TopicPartition, OffsetSpec> idle = new HashMap<>();
    assigned.forEach((id, progress) -> {
      if (!progress.inFlight && now - progress.lastProgressNanos > settings.stallTimeout().toNanos()) {
        idle.put(new TopicPartition(id.topic(), id.partition()), OffsetSpec.latest());
      }
    });
    if (idle.isEmpty()) {
      return;
    }
    admin.listOffsets(idle).all().toCompletionStage().thenAccept(ends -> {
      List<String> stalled = new ArrayList<>();
      ends.forEach((tp, info) -> {
        PartitionProgress progress = assigned.get(partitionId(tp));
        if (progress != null && !progress.inFlight && info.offset() > Math.max(0, progress.knownNextOffset)
            && !Long.valueOf(info.offset()).equals(restartedAtEnd.get(tp))) {
          // (A transaction's commit marker also lies past the last record: after one restart at
          // the same end offset, the watchdog waits for new records before it tries again.)
          stalled.add(tp + " (end " + info.offset() + ", at " + progress.knownNextOffset + ")");
          restartedAtEnd.put(tp, info.offset());
        }
      });
      if (!stalled.isEmpty()) {
        restartConsumer("no progress for " + settings.stallTimeout().toSeconds() + " s on " + stalled);
      }
    });
  }

  /** The old stream's batches stop resending; the new stream's assignment starts afresh. */
  private void abandonAssignments() {
    for (PartitionProgress progress : assigned.values()) {
      progress.revoked = true;
    }
    assigned.clear();
  }

  private synchronized void restartConsumer(String why) {
    if (stopped != null) {
      return;
    }
    log.warn("[{}] {}: restarting the consumer (partitions seek to their actors' offsets again)", settings.name(), why);
    Consumer.DrainingControl<Done> old = control;
    abandonAssignments();
    old.drainAndShutdown(system.executionContext()).whenComplete((d, e) -> {
      synchronized (this) {
        if (stopped == null && control == old) {
          run();
        }
      }
    });
  }

  /** Source topics must exist; dead-letter topics are created (same partition count) or must exist. */
  private void checkTopics() {
    String p = "fencepost.pipelines." + settings.name() + ".";
    Map<String, org.apache.kafka.clients.admin.TopicDescription> sources;
    try {
      sources = admin.describeTopics(settings.topics()).allTopicNames().get(30, java.util.concurrent.TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      throw new SettingsException(p + "topics", settings.topics(), "must name existing topics at "
          + settings.bootstrapServers() + " (" + e.getCause().getMessage() + "): create them or fix the names");
    } catch (Exception e) {
      throw new IllegalStateException("cannot reach Kafka at " + settings.bootstrapServers()
          + " to check topics " + settings.topics() + ": " + e, e);
    }
    for (String topic : settings.topics()) {
      String dlt = settings.deadLetterTopic(topic);
      int partitions = sources.get(topic).partitions().size();
      try {
        int existing = admin.describeTopics(List.of(dlt)).allTopicNames().get(30, java.util.concurrent.TimeUnit.SECONDS)
            .get(dlt).partitions().size();
        deadLetterPartitions.put(dlt, existing);
      } catch (java.util.concurrent.ExecutionException e) {
        if (!(e.getCause() instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException)) {
          throw new IllegalStateException("cannot check dead-letter topic [" + dlt + "]: " + e.getCause(), e);
        }
        if (!settings.deadLetterCreateTopic()) {
          throw new SettingsException(p + "dead-letter.create-topic", false, "is off and dead-letter topic [" + dlt
              + "] does not exist: create it with " + partitions + " partitions, or turn the setting on");
        }
        try {
          admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic(dlt, partitions, (short) -1)))
              .all().get(30, java.util.concurrent.TimeUnit.SECONDS);
          log.info("[{}] created dead-letter topic [{}] with {} partitions", settings.name(), dlt, partitions);
        } catch (java.util.concurrent.ExecutionException ce) {
          if (!(ce.getCause() instanceof org.apache.kafka.common.errors.TopicExistsException)) {
            throw new IllegalStateException("cannot create dead-letter topic [" + dlt + "]: " + ce.getCause()
                + "; create it by hand or grant the pipeline CREATE on it", ce);
          }
        } catch (Exception ce) {
          throw new IllegalStateException("cannot create dead-letter topic [" + dlt + "]: " + ce, ce);
        }
        deadLetterPartitions.put(dlt, partitions);
      } catch (Exception e) {
        throw new IllegalStateException("cannot check dead-letter topic [" + dlt + "]: " + e, e);
      }
    }
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
    Consumer.DrainingControl<Done> current = Consumer.createDrainingControl(pair);
    control = current;
    current.streamCompletion().whenComplete((done, error) -> {
      if (error != null) {
        synchronized (this) {
          if (stopped != null || control != current) {
            return;
          }
        }
        Duration wait = settings.retryBackoffMax();
        abandonAssignments();
        log.error("[{}] consumer stream failed; restarting it in {} s (partitions are re-assigned and seek to "
            + "their actors' offsets): {}", settings.name(), wait.toSeconds(), error.toString(), error);
        system.scheduler().scheduleOnce(wait, () -> {
          synchronized (this) {
            if (stopped == null && control == current) {
              run();
            }
          }
        }, system.executionContext());
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
      // A partition assigned again before its revocation took effect keeps its running stream and progress.
      assigned.putIfAbsent(id, new PartitionProgress());
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
          .thenCompose(v -> seekTargets(positions.stream().map(CompletableFuture::join).toList()))
          .thenApply(targets -> {
            // Not for partitions revoked meanwhile (overlapping rebalances): such a relay was never
            // stopped and published next to the owner's.
            tps.stream().map(this::partitionId).filter(assigned::containsKey).forEach(this::startRelay);
            return targets;
          });
    });
  }

  /**
   * Stored offsets, or the auto-offset-reset position for partitions that never stored one. A stored
   * offset below the log start (retention deleted records nobody applied) seeks to the log start, so
   * that {@code auto-offset-reset = latest} cannot skip the records that are still there.
   */
  private CompletionStage<Map<TopicPartition, Object>> seekTargets(List<Pair<TopicPartition, OptionalLong>> positions) {
    Map<TopicPartition, Object> out = new ConcurrentHashMap<>();
    Map<TopicPartition, OffsetSpec> unknown = new HashMap<>();
    Map<TopicPartition, OffsetSpec> fromTheStart = new HashMap<>();
    Set<TopicPartition> stored = new java.util.HashSet<>();
    for (Pair<TopicPartition, OptionalLong> p : positions) {
      if (p.second().isPresent()) {
        out.put(p.first(), p.second().getAsLong());
        stored.add(p.first());
        fromTheStart.put(p.first(), OffsetSpec.earliest());
      } else if (settings.autoOffsetReset().equals("earliest")) {
        out.put(p.first(), 0L);   // below the log start, the consumer's earliest reset takes over
        fromTheStart.put(p.first(), OffsetSpec.earliest());
      } else {
        unknown.put(p.first(), OffsetSpec.latest());
      }
    }
    // Log starts: a batch that starts at one, without holes, vouches for everything before it.
    CompletionStage<Void> starts = fromTheStart.isEmpty() ? CompletableFuture.completedFuture(null)
        : admin.listOffsets(fromTheStart).all().toCompletionStage().thenAccept(earliest -> earliest.forEach((tp, info) -> {
          PartitionProgress progress = assigned.get(partitionId(tp));
          if (progress != null) {
            progress.logStart = info.offset();
          }
          long next = (Long) out.get(tp);
          if (stored.contains(tp) && info.offset() > next) {
            log.error("[{}] {}: stored next offset {} is below the log start {}: records [{}..{}] were deleted by "
                + "retention before they were applied; seeking to the log start", settings.name(), tp, next,
                info.offset(), next, info.offset() - 1);
            out.put(tp, info.offset());
          }
        })).exceptionally(e -> {
          // Without the log starts the stored offsets still are the safe targets.
          log.warn("[{}] could not read the log start offsets of {}: {}", settings.name(), fromTheStart.keySet(),
              e.toString());
          return null;
        });
    CompletionStage<Void> ends = unknown.isEmpty() ? CompletableFuture.completedFuture(null)
        : admin.listOffsets(unknown).all().toCompletionStage().thenAccept(latest ->
            latest.forEach((tp, info) -> out.put(tp, info.offset())));
    return starts.thenCombine(ends, (a, b) -> {
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
          // Without the stored offset there is no safe seek: keep asking (the assignment waits).
          log.warn("[{}] actor of [{}] has not answered for {} (shard-handoff-timeout passed): {}; still asking",
              settings.name(), id.shortName(), settings.shardHandoffTimeout(), error.toString());
          return Patterns.after(Duration.ofSeconds(1), system.classicSystem().scheduler(), system.executionContext(),
              () -> localPosition(id, Instant.now().plus(Duration.ofSeconds(5)))).toCompletableFuture();
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
      stopRelay(partitionId(tp));
    }
  }

  private Source<ConsumerMessage.CommittableOffset, NotUsed> partitionFlow(TopicPartition tp,
      Source<ConsumerMessage.CommittableMessage<byte[], byte[]>, NotUsed> records) {
    PartitionId id = partitionId(tp);
    PartitionProgress progress = assigned.computeIfAbsent(id, k -> new PartitionProgress());
    java.util.concurrent.atomic.AtomicInteger live = liveStreams.computeIfAbsent(tp,
        k -> new java.util.concurrent.atomic.AtomicInteger());
    if (live.incrementAndGet() > 1) {
      // pekko-connectors-kafka can emit a second stream for a partition when assignment callbacks
      // overlap; the consumer then splits the partition's records between them. Neither stream may
      // skip what the other holds: each batch vouches only for what its stream read (coveredFrom).
      log.warn("[{}] a second stream for {} started while one still runs (overlapping rebalances); batches that "
          + "would skip records are refused and the consumer restarts if records stay missing", settings.name(), tp);
    }
    return records
        .watchTermination((mat, done) -> {
          done.whenComplete((d, e) -> live.decrementAndGet());
          return mat;
        })
        .groupedWithin(settings.maxBatchRecords(), settings.maxBatchLatency())
        .mapAsync(1, batch -> {
          BatchWork work = new BatchWork(id, progress, batch);
          progress.inFlight = true;
          return publishDeadLetters(work, work.deadLetters).thenCompose(v -> applyUntilDone(work, 0))
              .whenComplete((o, e) -> {
                progress.inFlight = false;
                progress.lastProgressNanos = System.nanoTime();
                progress.knownNextOffset = work.last() + 1;
              });
        })
        .mapConcat(o -> o.map(List::of).orElse(List.of()));
  }

  /** One batch on its way to its actor: decoded records, dead letters, attempts per failing offset. */
  private final class BatchWork {
    final PartitionId id;
    final PartitionProgress progress;
    final List<ConsumerMessage.CommittableMessage<byte[], byte[]>> batch;
    final Map<Long, ConsumerRecord<byte[], byte[]>> raw = new HashMap<>();
    final List<Inbound<?>> records = new ArrayList<>();
    final List<DeadLetter> deadLetters = new ArrayList<>();
    final Map<Long, Integer> handlerAttempts = new HashMap<>();
    private long first = Long.MAX_VALUE;
    private long last = Long.MIN_VALUE;
    // From which offset on the batch is known to hold every readable record (see ApplyBatch):
    // everywhere when it starts at the log start without holes, else nowhere until the log showed
    // that its holes hold nothing (onGap).
    long coveredFrom = Long.MAX_VALUE;
    int gapChecks;

    BatchWork(PartitionId id, PartitionProgress progress, List<ConsumerMessage.CommittableMessage<byte[], byte[]>> batch) {
      this.id = id;
      this.progress = progress;
      this.batch = batch;
      for (ConsumerMessage.CommittableMessage<byte[], byte[]> m : batch) {
        ConsumerRecord<byte[], byte[]> r = m.record();
        raw.put(r.offset(), r);
        first = Math.min(first, r.offset());
        last = Math.max(last, r.offset());
        try {
          records.add(toInbound(id, r));
        } catch (RuntimeException e) {
          deadLetters.add(new DeadLetter(id, r.offset(), key(r), e.getClass().getName(), e.getMessage(), 1));
        }
      }
      long logStart = progress.logStart;
      if (logStart >= 0 && first <= logStart && last - first + 1 == raw.size()) {
        coveredFrom = 0;   // nothing readable lies below the log start, and the batch has no holes
      }
    }

    long first() {
      return first;
    }

    long last() {
      return last;
    }
  }

  /**
   * Publishes dead letters to the dead-letter topic and waits for the broker's acknowledgement: only
   * then may the actor journal them and move the offset past them. A crash in between publishes
   * them again on redelivery, with the same {@code fencepost.dead-letter-id} header.
   */
  private CompletionStage<Void> publishDeadLetters(BatchWork work, List<DeadLetter> letters) {
    List<CompletableFuture<Void>> acks = new ArrayList<>();
    for (DeadLetter d : letters) {
      ConsumerRecord<byte[], byte[]> r = work.raw.get(d.offset());
      String dlt = settings.deadLetterTopic(r.topic());
      int partitions = deadLetterPartitions.getOrDefault(dlt, 1);
      ProducerRecord<byte[], byte[]> out = new ProducerRecord<>(dlt, r.partition() % partitions, r.key(), r.value());
      for (Header h : r.headers()) {
        out.headers().add(h);
      }
      DeadLetterHeaders.add(out.headers(), work.id, r.topic(), r.partition(), r.offset(), r.timestamp(),
          d.errorClass(), d.errorMessage(), d.attempts(), d.parked());
      CompletableFuture<Void> ack = new CompletableFuture<>();
      deadLetterProducer.send(out, (md, e) -> {
        if (e == null) {
          ack.complete(null);
        } else {
          ack.completeExceptionally(e);
        }
      });
      acks.add(ack);
    }
    return CompletableFuture.allOf(acks.toArray(new CompletableFuture[0])).handle((v, e) -> {
      if (e != null) {
        // Never move past a record whose dead letter is not durable: retry the publication.
        log.warn("[{}] publishing {} dead letter(s) failed, retrying: {}", work.id.shortName(), letters.size(), e.toString());
        return Patterns.after(settings.retryBackoffMin(), system.classicSystem().scheduler(), system.executionContext(),
            () -> publishDeadLetters(work, letters)).toCompletableFuture();
      }
      return CompletableFuture.<Void>completedFuture(null);
    }).thenCompose(f -> f);
  }

  /**
   * Sends the batch to its actor until it is applied; never skips it. Handler failures are retried
   * (retriable ones, up to handler-retry.max-attempts) or dead-lettered; journal failures, fences and
   * timeouts are resent with backoff. Stops trying (without committing) once the partition is
   * revoked: the next owner reads the actor's stored offset.
   */
  private CompletionStage<Optional<ConsumerMessage.CommittableOffset>> applyUntilDone(BatchWork work, int attempt) {
    if (work.progress.revoked) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    CompletionStage<BatchOutcome> reply = AskPattern.ask(region,
        (ActorRef<BatchOutcome> replyTo) -> new ShardingEnvelope<>(work.id.entityId(),
            new PartitionCommand.ApplyBatch(work.records, work.deadLetters, work.coveredFrom, replyTo)),
        settings.askTimeout(), system.scheduler());
    return reply.handle((outcome, error) -> {
      if (outcome instanceof BatchOutcome.Applied applied) {
        afterApplied(work.id, applied);
        return CompletableFuture.completedFuture(
            Optional.of(work.batch.get(work.batch.size() - 1).committableOffset()));
      }
      if (outcome instanceof BatchOutcome.Rejected rejected && rejected.error() instanceof HandlerFailedException h) {
        return onHandlerFailure(work, h, attempt);
      }
      if (outcome instanceof BatchOutcome.Rejected rejected && rejected.error() instanceof RecordsParkedException p) {
        return onParked(work, p, attempt);
      }
      if (outcome instanceof BatchOutcome.Rejected rejected && rejected.error() instanceof OffsetGapException gap) {
        return onGap(work, gap, attempt);
      }
      String reason;
      if (outcome instanceof BatchOutcome.Rejected rejected) {
        reason = rejected.error().getMessage();
      } else {
        reason = error instanceof TimeoutException || (error != null && error.getCause() instanceof TimeoutException)
            ? "no reply within ask-timeout " + settings.askTimeout() : String.valueOf(error);
      }
      work.progress.retries.incrementAndGet();
      work.progress.lastError = reason;
      Duration backoff = backoff(attempt);
      log.warn("[{}] batch at offsets [{}..{}] not applied (attempt {}): {}; resending in {} ms", work.id.shortName(),
          work.first(), work.last(), attempt + 1, reason, backoff.toMillis());
      return Patterns.after(backoff, system.classicSystem().scheduler(), system.executionContext(),
          () -> applyUntilDone(work, attempt + 1)).toCompletableFuture();
    }).thenCompose(f -> f);
  }

  private CompletionStage<Optional<ConsumerMessage.CommittableOffset>> onHandlerFailure(BatchWork work,
      HandlerFailedException h, int attempt) {
    int tries = work.handlerAttempts.merge(h.offset(), 1, Integer::sum);
    work.progress.retries.incrementAndGet();
    work.progress.lastError = h.getMessage();
    ConsumerRecord<byte[], byte[]> r = work.raw.get(h.offset());
    if (r == null) {
      // Cannot happen: the actor only fails on records of this batch. Resend rather than guess.
      log.error("[{}] handler failure for offset [{}] outside the batch [{}..{}]; resending", work.id.shortName(),
          h.offset(), work.first(), work.last());
      return Patterns.after(backoff(attempt), system.classicSystem().scheduler(), system.executionContext(),
          () -> applyUntilDone(work, attempt + 1)).toCompletableFuture();
    }
    if (h.isRetriable() && tries < settings.handlerRetryMaxAttempts()) {
      Duration wait = handlerBackoff(tries);
      log.warn("[{}] offset [{}]: handler failed (attempt {} of {}), retrying in {} ms: {}: {}", work.id.shortName(),
          h.offset(), tries, settings.handlerRetryMaxAttempts(), wait.toMillis(), h.causeClass(), h.causeMessage());
      return Patterns.after(wait, system.classicSystem().scheduler(), system.executionContext(),
          () -> applyUntilDone(work, attempt)).toCompletableFuture();
    }
    DeadLetter d = new DeadLetter(work.id, h.offset(), key(r), h.causeClass(), h.causeMessage(), tries);
    log.warn("[{}] offset [{}]: handler failed {} after {} attempt(s); dead-lettering it: {}: {}", work.id.shortName(),
        h.offset(), h.isRetriable() ? "retriably" : "fatally", tries, h.causeClass(), h.causeMessage());
    work.records.removeIf(in -> in.offset() == h.offset());
    work.deadLetters.add(d);
    return publishDeadLetters(work, List.of(d)).thenCompose(v -> applyUntilDone(work, attempt));
  }

  /**
   * The batch lacks offsets between the partition's stored offset and its last record. The log
   * decides: when it holds no readable record there (transaction markers, aborted or compacted
   * records, or records deleted by retention: those are lost and said so), the batch is resent
   * covering from the stored offset. When it does, another stream of this partition holds them (the
   * consumer split the partition between two streams) or nobody does: resent with backoff a few
   * times, then the consumer restarts and every partition reads again from its stored offset.
   */
  private CompletionStage<Optional<ConsumerMessage.CommittableOffset>> onGap(BatchWork work, OffsetGapException gap,
      int attempt) {
    TopicPartition tp = new TopicPartition(work.id.topic(), work.id.partition());
    boolean fresh = gap.storedNextOffset() < 0;
    if (fresh && settings.autoOffsetReset().equals("latest")) {
      // A partition that never stored an offset starts where it is first read (auto-offset-reset latest).
      work.coveredFrom = work.first();
      return applyUntilDone(work, attempt);
    }
    long from = Math.max(0, gap.storedNextOffset());
    return CompletableFuture.supplyAsync(() -> logProbe.read(tp, from, work.last() + 1, settings.askTimeout()), blocking)
        .handle((range, error) -> {
          java.util.TreeSet<Long> missing = new java.util.TreeSet<>(range == null ? Set.of() : range.readable());
          missing.removeAll(work.raw.keySet());
          if (range != null && range.complete() && missing.isEmpty()) {
            if (range.deletedPart() && fresh) {
              log.info("[{}] first records of the partition: it starts at the log start {} (auto-offset-reset "
                  + "earliest)", work.id.shortName(), range.logStart());
            } else if (range.deletedPart()) {
              log.error("[{}] records at offsets [{}..{}] were deleted by retention before they were applied: they are "
                  + "lost (raise the topic's retention.ms or alert on consumer lag)", work.id.shortName(), from,
                  range.logStart() - 1);
            } else {
              log.debug("[{}] offsets [{}..{}] hold no readable record between the batch's records; resending it",
                  work.id.shortName(), from, work.last());
            }
            work.coveredFrom = from;
            return applyUntilDone(work, attempt);
          }
          String what = range == null ? "the log could not be read (" + error + ")"
              : !range.complete() ? "the log could not be read up to offset " + work.last() + " in time"
              : missing.size() + " readable record(s) from offset " + missing.first() + " are not in this stream";
          work.progress.retries.incrementAndGet();
          work.progress.lastError = gap.getMessage();
          if (++work.gapChecks >= 4) {
            restartConsumer("the stream of " + work.id.shortName() + " lacks offsets after the stored offset " + from
                + " (" + what + ")");
            return CompletableFuture.completedFuture(Optional.<ConsumerMessage.CommittableOffset>empty());
          }
          Duration backoff = backoff(attempt);
          log.warn("[{}] batch at offsets [{}..{}] would skip records after stored offset {}: {}; resending in {} ms",
              work.id.shortName(), work.first(), work.last(), from, what, backoff.toMillis());
          return Patterns.after(backoff, system.classicSystem().scheduler(), system.executionContext(),
              () -> applyUntilDone(work, attempt + 1)).toCompletableFuture();
        }).thenCompose(f -> f);
  }

  /** Per-key ordering: dead-letters records whose key is parked (marked parked), then resends the rest. */
  private CompletionStage<Optional<ConsumerMessage.CommittableOffset>> onParked(BatchWork work,
      RecordsParkedException parked, int attempt) {
    List<DeadLetter> letters = new ArrayList<>();
    for (long offset : parked.offsets()) {
      ConsumerRecord<byte[], byte[]> r = work.raw.get(offset);
      if (r == null || work.deadLetters.stream().anyMatch(d -> d.offset() == offset)) {
        continue;
      }
      letters.add(new DeadLetter(work.id, offset, key(r), "parked",
          "key [" + key(r).orElse("") + "] is parked behind an earlier failed record; replay that one first", 1, true));
    }
    log.info("[{}] parking {} record(s) behind failed records of their keys: offsets {}", work.id.shortName(),
        letters.size(), parked.offsets());
    work.records.removeIf(in -> parked.offsets().contains(in.offset()));
    work.deadLetters.addAll(letters);
    return publishDeadLetters(work, letters).thenCompose(v -> applyUntilDone(work, attempt));
  }

  private Duration handlerBackoff(int tries) {
    double base = settings.handlerRetryInitial().toMillis() * Math.pow(settings.handlerRetryMultiplier(), tries - 1);
    long capped = (long) Math.min(settings.handlerRetryMax().toMillis(), base);
    long jitter = (long) (capped * 0.2 * ThreadLocalRandom.current().nextDouble());
    return Duration.ofMillis(Math.min(settings.handlerRetryMax().toMillis(), capped + jitter));
  }

  private static Optional<String> key(ConsumerRecord<byte[], byte[]> r) {
    return r.key() == null ? Optional.empty()
        : Optional.of(new String(r.key(), java.nio.charset.StandardCharsets.UTF_8));
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
    if (r.value() != null && r.value().length > settings.deadLetterMaxRecordBytes()) {
      throw new RecordTooLargeException("value of " + r.value().length + " bytes exceeds fencepost.pipelines."
          + settings.name() + ".dead-letter.max-record-bytes = " + settings.deadLetterMaxRecordBytes());
    }
    V value = valueDeserializer.deserialize(r.topic(), r.headers(), r.value());
    if (value == null) {
      throw new org.apache.kafka.common.errors.SerializationException("the value deserializer returned null for a "
          + (r.value() == null ? "null (tombstone)" : r.value().length + "-byte") + " value");
    }
    return new Inbound<>(id, r.offset(), key(r), value, headers, Instant.ofEpochMilli(Math.max(0, r.timestamp())));
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
    Duration probe = settings.askTimeout().compareTo(Duration.ofSeconds(5)) < 0 ? settings.askTimeout()
        : Duration.ofSeconds(5);
    for (PartitionId id : ids) {
      statuses.add(askStatus(id, probe).toCompletableFuture());
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
                s == null ? 0 : s.droppedRedelivery(), s == null ? 0 : s.deadLettered(), progress.retries.get(),
                progress.lastError));
          }
          views.sort(java.util.Comparator.comparing((PartitionView pv) -> pv.partition().topic())
              .thenComparingInt(pv -> pv.partition().partition()));
          return views;
        }));
  }

  private void closeClients() {
    admin.close(Duration.ofSeconds(5));
    logProbe.close();
    deadLetterProducer.close(Duration.ofSeconds(5));
    if (outboxProducer != null) {
      outboxProducer.close(Duration.ofSeconds(5));
    }
  }

  /** Runs the outbox relay of a partition this node now owns (its actor answered from here). */
  private void startRelay(PartitionId id) {
    if (outboxProducer == null) {
      return;
    }
    relays.computeIfAbsent(id, k -> system.systemActorOf(OutboxRelay.create(k, settings.outbox(), outboxProducer),
        "fencepost-outbox-" + settings.name() + "-" + relaysStarted.incrementAndGet(),
        org.apache.pekko.actor.typed.Props.empty()));
  }

  private void stopRelay(PartitionId id) {
    ActorRef<OutboxRelay.Command> relay = relays.remove(id);
    if (relay != null) {
      relay.tell(OutboxRelay.Stop.INSTANCE);
    }
  }

  /** After a batch was applied: wakes its partition's relay when the batch wrote outbox records. */
  private void afterApplied(PartitionId id, BatchOutcome.Applied applied) {
    if (applied.published() == 0) {
      return;
    }
    ActorRef<OutboxRelay.Command> relay = relays.get(id);
    if (relay != null) {
      relay.tell(OutboxRelay.Wake.INSTANCE);
    } else if (outboxProducer == null && outboxOffWarned.compareAndSet(false, true)) {
      log.error("[{}] handlers write outbox records (Effects.andPublish) but fencepost.pipelines.{}.outbox.enabled "
          + "is off: they are journaled and wait unpublished; set it to on", settings.name(), settings.name());
    }
  }

  @Override
  public synchronized CompletionStage<Done> stop() {
    if (stopped != null) {
      return stopped;
    }
    log.info("[{}] stopping: draining in-flight batches", settings.name());
    if (watchdog != null) {
      watchdog.cancel();
    }
    CompletionStage<Done> drained = control.drainAndShutdown(system.executionContext());
    stopped = drained.toCompletableFuture()
        .completeOnTimeout(Done.getInstance(), settings.drainTimeout().toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)
        .whenComplete((d, e) -> {
          relays.keySet().forEach(this::stopRelay);
          closeClients();
        });
    return stopped;
  }
}
