package io.fencepost.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Objects;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

import io.fencepost.GuaranteeStatement;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionCommand;
import io.fencepost.PartitionContext;
import io.fencepost.PartitionId;
import io.fencepost.PartitionStatus;
import io.fencepost.errors.SettingsException;
import io.fencepost.kafka.internal.FenceCheck;
import io.fencepost.kafka.internal.LogProbe;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;

import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.pekko.Done;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running pipeline of one node: wires the partition actors' host, the ownership state machine (consumer), batch
 * delivery, dead letters and outbox relays, and checks topics at start and stalls while running.
 */
final class RunningPipeline<V> implements Pipeline {

  private static final Logger log = LoggerFactory.getLogger(RunningPipeline.class);

  private final ActorSystem<?> system;
  private final PipelineSettings settings;
  private final GuaranteeStatement guarantee;
  private final Address self;
  private final Admin admin;
  private final LogProbe logProbe;
  private final DeadLetterPublisher deadLetters;
  private final RelayRegistry relays;
  private final PartitionHost host;
  private final SeekTargets targets;
  private final PartitionOwnership ownership;
  private final JournalLiveness journal;
  private volatile CompletionStage<Done> stopped;
  private volatile Cancellable watchdog;
  private volatile Cancellable progress;
  private final ProgressLine progressLine = new ProgressLine();
  private final NodeTotals totals = new NodeTotals();
  /** Log-end reads that failed in a row (logged at the first and every 20th). */
  private final java.util.concurrent.atomic.AtomicInteger endsUnknown = new java.util.concurrent.atomic.AtomicInteger();
  private final StallRestarts stallRestarts;
  private final RecordDecoder<V> decoder;
  /** The consumer's properties (security settings included), read once. */
  private final Map<String, Object> consumerProperties;

  private RunningPipeline(ActorSystem<?> system, Function<PartitionContext, ? extends PartitionActor<V, ?, ?>> factory,
      RecordDecoder<V> decoder, PipelineSettings settings) {
    this.system = system;
    this.settings = settings;
    this.decoder = decoder;
    ClientProperties clients = new ClientProperties(system, settings);
    this.consumerProperties = clients.consumer();
    this.guarantee = guarantee(system, settings);
    this.host = new PartitionHost(system, settings, factory);
    this.self = system.address();
    this.admin = Admin.create(clients.admin());
    this.logProbe = new LogProbe(settings.bootstrapServers(), clients.probe());
    this.deadLetters = new DeadLetterPublisher(system, settings);
    this.relays = new RelayRegistry(system, settings);
    this.targets = new SeekTargets(system, settings, host, admin);
    BatchDelivery.StreamControl control = new BatchDelivery.StreamControl() {
      @Override
      public void restart(PartitionId id, PartitionProgress assignment, String why) {
        ownership().restart(id, assignment, why);
      }

      @Override
      public void halt(PartitionId id, PartitionProgress assignment, String why, String cause) {
        ownership().halt(id, assignment, why, cause);
      }
    };
    BatchDelivery<V> delivery = new BatchDelivery<>(system, settings, host, decoder, deadLetters, relays,
        logProbe, system.dispatchers().lookup(DispatcherSelector.blocking()), control, totals);
    this.ownership = new PartitionOwnership(system, settings, consumerProperties, KafkaClients.REAL,
        new OwnershipSeams(host, targets, delivery, relays));
    this.journal = new JournalLiveness(system, settings);
    this.stallRestarts = new StallRestarts(settings.stallTimeout());
  }

  private PartitionOwnership ownership() {
    return ownership;
  }

  static GuaranteeStatement guarantee(ActorSystem<?> system, PipelineSettings settings) {
    return GuaranteeStatement.of(settings.partitionActor(), "[" + JournalWarmup.journalPlugin(system, settings) + "]");
  }

  static <V> Pipeline start(ActorSystem<?> system, Function<PartitionContext, ? extends PartitionActor<V, ?, ?>> factory,
      RecordDecoder<V> decoder, PipelineSettings settings) {
    RunningPipeline<V> p = new RunningPipeline<>(system, factory, decoder, settings);
    try {
      p.checkTopics();
      p.decoder.configure(p.consumerProperties);
      JournalWarmup.await(system, settings, settings.askTimeout());
      FenceCheck.verify(system, settings.name(), settings.partitionActor().journalPluginId(), settings.askTimeout());
      String isolation = settings.kafkaClients().getOrDefault(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
      if (!isolation.equals("read_committed")) {
        log.warn("[{}] kafka-clients.isolation.level is [{}]: records of aborted producer transactions are applied "
            + "as effects; set it to read_committed if any producer of {} uses transactions", settings.name(),
            isolation, settings.topics());
      }
      TransportCheck.plainTcpWarning(system.settings().config()).ifPresent(w -> log.warn("[{}] {}", settings.name(), w));
      log.info("[{}] starting on [{}], group [{}], topics {}, assignor [{}]; guarantee: {}", settings.name(), p.self,
          settings.groupId(), settings.topics(),
          p.consumerProperties.get(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG), p.guarantee.render());
      p.ownership.start();
    } catch (RuntimeException e) {
      p.closeClients();
      p.decoder.close();
      throw e;
    }
    RunningPipelines.get(system).add(p);
    // Timers first: a stop (below, from coordinated shutdown) cancels them.
    p.startWatchdog();
    p.startProgressLine();
    // Leaving the cluster (SIGTERM, ActorSystem.terminate) drains this node's batches first.
    CoordinatedShutdown.get(system).addTask(CoordinatedShutdown.PhaseBeforeServiceUnbind(),
        "fencepost-pipeline-" + settings.name(), p::stop);
    return p;
  }

  /** One INFO line every {@code progress-interval}: this node's totals, its partitions' lag. */
  private void startProgressLine() {
    Duration every = settings.progressInterval();
    if (every.isZero()) {
      return;
    }
    AtomicBoolean running = new AtomicBoolean();
    progress = system.scheduler().scheduleWithFixedDelay(every, every, () -> {
      // One status at a time: a slow one (actors asked with a 5 s limit) skips ticks, lines stay in order.
      if (stopped != null || !running.compareAndSet(false, true)) {
        return;
      }
      status().whenComplete((views, e) -> {
        running.set(false);
        if (e != null) {
          log.debug("[{}] progress line skipped: {}", settings.name(), e.toString());
        } else if (stopped == null) {
          log.info(progressLine.render(settings.name(), totals.counts(), views));
        }
      });
    }, system.executionContext());
  }

  /**
   * A partition that flows, has records to read, no batch in flight and no progress for
   * {@code stall-timeout} is stuck: it seeks to its actor's stored offset again. Never silently
   * stalled (and never seen since the ownership state machine: logged as a WARN to look into). Each
   * round also checks that the persistence plugins run ({@link JournalLiveness}).
   */
  private void startWatchdog() {
    Duration every = Duration.ofSeconds(Math.max(1, settings.stallTimeout().toSeconds() / 4));
    watchdog = system.scheduler().scheduleWithFixedDelay(every, every, () -> {
      try {
        if (stopped == null) {
          journal.probe();
        }
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
    Map<TopicPartition, OffsetSpec> all = new HashMap<>();
    Map<TopicPartition, PartitionProgress> progressOf = new HashMap<>();
    ownership.assigned().forEach((id, progress) -> {
      TopicPartition tp = new TopicPartition(id.topic(), id.partition());
      all.put(tp, OffsetSpec.latest());
      progressOf.put(tp, progress);
    });
    if (all.isEmpty()) {
      return;
    }
    // The log end as the consumer sees it: with read_committed, the last stable offset.
    IsolationLevel isolation = "read_uncommitted".equalsIgnoreCase(String.valueOf(
        consumerProperties.get(ConsumerConfig.ISOLATION_LEVEL_CONFIG)).trim()) ? IsolationLevel.READ_UNCOMMITTED
        : IsolationLevel.READ_COMMITTED;
    admin.listOffsets(all, new ListOffsetsOptions(isolation)).all().toCompletionStage()
        .whenComplete((ends, e) -> {
          if (e == null) {
            endsUnknown.set(0);
          } else if (endsUnknown.getAndIncrement() % 20 == 0) {
            log.warn("[{}] cannot read the log ends of its partitions (lag unknown, stalls not checked): {}",
                settings.name(), e.toString());
          }
        })
        .thenAccept(ends -> ends.forEach((tp, info) -> {
      PartitionProgress progress = progressOf.get(tp);
      progress.logEnd = info.offset();   // the lag gauge reads it
      long now = System.nanoTime();
      if (progress.flowing && !progress.inFlight && progress.halted == null
          && now - progress.lastProgressNanos > settings.stallTimeout().toNanos()
          && info.offset() > Math.max(0, progress.knownNextOffset)
          && stallRestarts.due(tp, info.offset(), progress.knownNextOffset, now)) {
        // (A transaction's commit marker also lies past the last record: restarts at the same end and
        // position back off rather than repeat every stall-timeout.)
        int times = stallRestarts.times(tp);
        ownership.restart(partitionId(tp), progress, "no progress for " + settings.stallTimeout().toSeconds()
            + " s (end " + info.offset() + ", at " + progress.knownNextOffset + ")" + (times > 1 ? "; restart " + times
            + " at this place (a transaction marker past the last record also looks like this)" : ""));
      }
    }));
  }

  private PartitionId partitionId(TopicPartition tp) {
    return new PartitionId(settings.groupId(), tp.topic(), tp.partition());
  }

  /** Each topic's max.message.bytes (the broker's default where the topic sets none). */
  private Map<String, Integer> maxMessageBytes(List<String> topics) {
    List<ConfigResource> resources = topics.stream()
        .map(t -> new ConfigResource(ConfigResource.Type.TOPIC, t)).toList();
    try {
      Map<ConfigResource, Config> configs = admin.describeConfigs(resources).all().get(30, TimeUnit.SECONDS);
      Map<String, Integer> out = new HashMap<>();
      configs.forEach((r, c) -> out.put(r.name(), Integer.parseInt(c.get(TopicConfig.MAX_MESSAGE_BYTES_CONFIG).value())));
      return out;
    } catch (Exception e) {
      // Not fatal: dead letters are sized for Kafka's default limit, and a larger one is published
      // without its value (logged).
      log.warn("[{}] cannot read max.message.bytes of topics {} (grant the pipeline's Kafka user DESCRIBE_CONFIGS on "
          + "them): dead letters are sized for Kafka's default of {} bytes: {}", settings.name(), topics,
          KAFKA_DEFAULT_MAX_MESSAGE_BYTES, e.toString());
      Map<String, Integer> out = new HashMap<>();
      topics.forEach(t -> out.put(t, KAFKA_DEFAULT_MAX_MESSAGE_BYTES));
      return out;
    }
  }

  private static final int KAFKA_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

  /** Source topics must exist; dead-letter topics are created (same partition count) or must exist. */
  private void checkTopics() {
    String p = "fencepost.pipelines." + settings.name() + ".";
    Map<String, TopicDescription> sources;
    try {
      sources = admin.describeTopics(settings.topics()).allTopicNames().get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof AuthenticationException) {
        // One line naming where credentials are set, never their values.
        throw new SettingsException(p + "common-kafka-clients", "security.protocol="
            + consumerProperties.getOrDefault("security.protocol", "PLAINTEXT") + ", sasl.mechanism="
            + consumerProperties.getOrDefault("sasl.mechanism", "GSSAPI"), "was refused by Kafka at "
            + settings.bootstrapServers() + " (" + e.getCause().getMessage() + "): check the user and password in "
            + "sasl.jaas.config (fencepost.kafka-clients, or this pipeline's common-kafka-clients)");
      }
      if (e.getCause() instanceof AuthorizationException) {
        throw new SettingsException(p + "topics", settings.topics(), "cannot be described by this pipeline's Kafka "
            + "user at " + settings.bootstrapServers() + " (" + e.getCause().getMessage() + "): grant it DESCRIBE and "
            + "READ on the topics and READ on group [" + settings.groupId() + "]");
      }
      throw new SettingsException(p + "topics", settings.topics(), "must name existing topics at "
          + settings.bootstrapServers() + " (" + e.getCause().getMessage() + "): create them or fix the names");
    } catch (Exception e) {
      throw new IllegalStateException("cannot reach Kafka at " + settings.bootstrapServers()
          + " to check topics " + settings.topics() + ": " + e, e);
    }
    Map<String, Integer> maxMessageBytes = maxMessageBytes(settings.topics());
    maxMessageBytes.values().forEach(deadLetters::knowLargestSourceRecord);
    for (String topic : settings.topics()) {
      String dlt = settings.deadLetter().topicFor(topic);
      int partitions = sources.get(topic).partitions().size();
      try {
        int existing = admin.describeTopics(List.of(dlt)).allTopicNames().get(30, TimeUnit.SECONDS)
            .get(dlt).partitions().size();
        deadLetters.knowPartitions(dlt, existing);
        int dltMax = maxMessageBytes(List.of(dlt)).get(dlt);
        int needed = DeadLetterPublisher.deadLetterTopicMaxMessageBytes(maxMessageBytes.get(topic));
        if (dltMax < needed) {
          log.warn("[{}] dead-letter topic [{}] takes records up to {} bytes (max.message.bytes), [{}] up to {}: a "
              + "dead letter larger than that is published without its value (ERROR then). Set max.message.bytes of "
              + "[{}] to {}", settings.name(), dlt, dltMax, topic, maxMessageBytes.get(topic), dlt, needed);
        }
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
          throw new IllegalStateException("cannot check dead-letter topic [" + dlt + "]: " + e.getCause(), e);
        }
        if (!settings.deadLetter().createTopic()) {
          throw new SettingsException(p + "dead-letter.create-topic", false, "is off and dead-letter topic [" + dlt
              + "] does not exist: create it with " + partitions + " partitions, or turn the setting on");
        }
        try {
          // Every record of the source fits, with the headers a dead letter adds.
          String dltMax = Integer.toString(DeadLetterPublisher.deadLetterTopicMaxMessageBytes(maxMessageBytes.get(topic)));
          admin.createTopics(List.of(new NewTopic(dlt, partitions, (short) -1)
                  .configs(Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, dltMax))))
              .all().get(30, TimeUnit.SECONDS);
          log.info("[{}] created dead-letter topic [{}] with {} partitions, max.message.bytes {}", settings.name(), dlt,
              partitions, dltMax);
        } catch (ExecutionException ce) {
          if (!(ce.getCause() instanceof TopicExistsException)) {
            throw new IllegalStateException("cannot create dead-letter topic [" + dlt + "]: " + ce.getCause()
                + "; create it by hand or grant the pipeline CREATE on it", ce);
          }
        } catch (Exception ce) {
          throw new IllegalStateException("cannot create dead-letter topic [" + dlt + "]: " + ce, ce);
        }
        deadLetters.knowPartitions(dlt, partitions);
      } catch (Exception e) {
        throw new IllegalStateException("cannot check dead-letter topic [" + dlt + "]: " + e, e);
      }
    }
    deadLetters.start();
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
    List<PartitionId> ids = new ArrayList<>(ownership.assigned().keySet());
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
      statuses.add(targets.askStatus(id, probe).toCompletableFuture());
    }
    return ends.thenCompose(endOffsets -> CompletableFuture.allOf(statuses.toArray(new CompletableFuture[0]))
        .handle((v, e) -> {
          List<PartitionView> views = new ArrayList<>();
          for (int i = 0; i < ids.size(); i++) {
            PartitionId id = ids.get(i);
            PartitionProgress progress = ownership.assigned().getOrDefault(id, new PartitionProgress());
            PartitionStatus s = statuses.get(i).isCompletedExceptionally() ? null : statuses.get(i).join();
            Long end = endOffsets.get(new TopicPartition(id.topic(), id.partition()));
            OptionalLong next = s == null ? OptionalLong.empty() : s.nextOffset();
            // Without the actor's answer its stored offset is unknown, and so is the lag.
            OptionalLong lag = end == null || s == null ? OptionalLong.empty() : OptionalLong.of(end - next.orElse(0));
            views.add(new PartitionView(id, s == null ? PartitionView.UNANSWERED : s.node(), next, lag,
                s == null ? 0 : s.appliedRecords(), s == null ? 0 : s.droppedByKey(),
                s == null ? 0 : s.droppedRedelivery(), s == null ? 0 : s.deadLettered(), progress.retries.get(),
                progress.lastError, progress.halted == null ? "" : progress.halted));
          }
          views.sort(Comparator.comparing((PartitionView pv) -> pv.partition().topic())
              .thenComparingInt(pv -> pv.partition().partition()));
          return views;
        }));
  }

  @Override
  public PipelineHealth health() {
    String name = "[" + settings.name() + "] ";
    if (!ownership.running() && stopped == null) {
      return new PipelineHealth(settings.name(), false, false, name + "its consumer thread ended without a stop");
    }
    long maxPoll = maxPollIntervalMillis();
    long sinceTurn = ownership.sinceLastTurnNanos() / 1_000_000;
    if (stopped == null && sinceTurn > maxPoll) {
      return new PipelineHealth(settings.name(), false, false, name + "its consumer thread is stuck: it has not gone "
          + "round its loop for " + sinceTurn / 1000 + " s (max.poll.interval.ms " + maxPoll + ")");
    }
    if (stopped == null) {
      String dead = journal.deadReason(settings.deadAfter());
      if (!dead.isEmpty()) {
        return new PipelineHealth(settings.name(), false, false, name + dead);
      }
    }
    String notReady = notReadyReason();
    return new PipelineHealth(settings.name(), true, notReady.isEmpty(), notReady.isEmpty() ? "" : name + notReady);
  }

  /** Why this node's part of the pipeline is not ready, or empty. */
  private String notReadyReason() {
    if (stopped != null) {
      return "stopping";
    }
    String failure = ownership.consumerFailure();
    if (failure != null) {
      return "its consumer failed and is being replaced: " + failure;
    }
    String missing = journal.missingReason();
    if (!missing.isEmpty()) {
      return missing;
    }
    if (!ownership.joined()) {
      return "waiting for an assignment from group [" + settings.groupId() + "]";
    }
    long sinceChange = ownership.sinceAssignmentChangedNanos();
    if (sinceChange < PipelineHealth.SETTLE.toNanos()) {
      return "its assignment changed " + sinceChange / 1_000_000 + " ms ago (a rebalance may have a second round)";
    }
    long now = System.nanoTime();
    List<String> problems = new ArrayList<>();
    Map<PartitionId, PartitionProgress> byPartition = new TreeMap<>(
        Comparator.comparing(PartitionId::topic).thenComparingInt(PartitionId::partition));
    byPartition.putAll(ownership.assigned());
    byPartition.forEach((id, p) -> {
      String tp = id.topic() + "-" + id.partition();
      if (p.halted != null) {
        problems.add(tp + " halted: " + (p.halted.length() > 160 ? p.halted.substring(0, 160) + "..." : p.halted));
      } else if (!p.flowing) {
        problems.add(tp + " recovering for " + (now - p.assignedNanos) / 1_000_000_000 + " s");
      } else if (p.stalled(settings.stallTimeout(), now)) {
        String error = Objects.toString(p.lastError, "");
        problems.add(tp + " stalled: no batch finished for " + (now - Math.max(p.lastProgressNanos,
            p.busySinceNanos)) / 1_000_000_000 + " s" + (error.isEmpty() ? "" : " (" + error + ")"));
      }
    });
    return String.join("; ", problems);
  }

  private long maxPollIntervalMillis() {
    try {
      return Long.parseLong(String.valueOf(consumerProperties.getOrDefault(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG,
          "300000")).trim());
    } catch (NumberFormatException e) {
      return 300_000;
    }
  }

  private void closeClients() {
    admin.close(Duration.ofSeconds(5));
    logProbe.close();
    deadLetters.close(Duration.ofSeconds(5));
    relays.close(Duration.ofSeconds(5));
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
    if (progress != null) {
      progress.cancel();
    }
    CompletableFuture<Done> consumerClosed = ownership.stop().toCompletableFuture();
    // The streams ended with the consumer: nothing deserializes any more. Closed before stop() completes.
    CompletableFuture<Done> released = consumerClosed.handle((d, e) -> {
      decoder.close();
      return Done.getInstance();
    });
    consumerClosed.whenComplete((d, e) -> {
      relays.stopAll();
      closeClients();
    });
    // Coordinated shutdown waits for the drain, not for the consumer's goodbye to the group.
    stopped = released
        .completeOnTimeout(Done.getInstance(), settings.drainTimeout().toMillis() + 500, TimeUnit.MILLISECONDS);
    // Reported as stopping until then; afterwards health checks no longer count it.
    stopped.whenComplete((d, e) -> RunningPipelines.get(system).remove(this));
    return stopped;
  }
}
