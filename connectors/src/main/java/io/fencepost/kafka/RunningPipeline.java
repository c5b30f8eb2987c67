package io.fencepost.kafka;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

import io.fencepost.GuaranteeStatement;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;
import io.fencepost.PartitionId;
import io.fencepost.Query;
import io.fencepost.errors.RetriableException;
import io.fencepost.kafka.internal.NodeNames;
import io.fencepost.kafka.internal.FenceCheck;
import io.fencepost.kafka.internal.LogProbe;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.pekko.Done;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running pipeline of one node: wires the partition actors' host, the ownership state machine
 * (consumer), batch delivery, dead letters and outbox relays; starts them after the checks
 * ({@link TopicChecks}, the journal's warm-up and fence check), runs the watchdog
 * ({@link StallWatchdog}) and the progress line, answers status and health ({@link PipelineStatus}),
 * and stops them in order.
 */
final class RunningPipeline<V> implements Pipeline {

  private static final Logger log = LoggerFactory.getLogger(RunningPipeline.class);

  private final ActorSystem<?> system;
  private final PipelineSettings settings;
  private final GuaranteeStatement guarantee;
  private final String self;
  private final Admin admin;
  private final LogProbe logProbe;
  private final DeadLetterPublisher deadLetters;
  private final RelayRegistry relays;
  private final PartitionHost host;
  private final SeekTargets targets;
  private final PartitionOwnership ownership;
  private final JournalLiveness journal;
  private final TopicChecks topicChecks;
  private final StallWatchdog watchdog;
  private final PipelineStatus statusAndHealth;
  private final QueryRouter queries;
  private final ClusterStatus cluster;
  private volatile CompletionStage<Done> stopped;
  private volatile Cancellable progress;
  private final ProgressLine progressLine = new ProgressLine();
  private final NodeTotals totals = new NodeTotals();
  private final RecordDecoder<V> decoder;
  /** The consumer's properties (security settings included), read once. */
  private final Map<String, Object> consumerProperties;

  private RunningPipeline(ActorSystem<?> system, Function<PartitionContext, ? extends PartitionActor<V, ?, ?>> factory,
      RecordDecoder<V> decoder, PipelineSettings settings) {
    this.system = system;
    this.settings = settings;
    this.decoder = decoder;
    Ticker ticker = Ticker.SYSTEM;   // every age the pipeline measures reads this clock
    ClientProperties clients = new ClientProperties(system, settings);
    this.consumerProperties = clients.consumer();
    this.guarantee = guarantee(system, settings);
    this.host = new PartitionHost(system, settings, factory);
    this.self = NodeNames.of(system);
    // Settings refused by the producers fail here, before any client exists to leak.
    this.deadLetters = new DeadLetterPublisher(system, settings, KafkaClients.REAL, ticker);
    this.relays = new RelayRegistry(system, settings, KafkaClients.REAL, consumerProperties, ticker);
    Admin createdAdmin = null;
    LogProbe createdProbe;
    try {
      createdAdmin = KafkaClients.REAL.admin(clients.admin());
      createdProbe = new LogProbe(KafkaClients.REAL.consumer(clients.probe()));
    } catch (RuntimeException e) {
      if (createdAdmin != null) {
        createdAdmin.close(Duration.ZERO);
      }
      relays.close(Duration.ZERO);
      throw e;
    }
    this.admin = createdAdmin;
    this.logProbe = createdProbe;
    this.targets = new SeekTargets(system, settings, host, admin);
    BatchDelivery.StreamControl control = new BatchDelivery.StreamControl() {
      @Override
      public void restart(PartitionId id, PartitionProgress assignment, String cause, String why) {
        ownership().restart(id, assignment, cause, why);
      }

      @Override
      public void halt(PartitionId id, PartitionProgress assignment, String why, String cause) {
        ownership().halt(id, assignment, why, cause);
      }
    };
    BatchDelivery<V> delivery = new BatchDelivery<>(system, settings, host, decoder, deadLetters, relays,
        logProbe, system.dispatchers().lookup(DispatcherSelector.blocking()), control, totals, ticker);
    this.ownership = new PartitionOwnership(system, settings, consumerProperties, KafkaClients.REAL,
        new OwnershipSeams(host, targets, delivery, relays, ticker));
    this.journal = new JournalLiveness(system, settings, ticker);
    this.topicChecks = new TopicChecks(settings, admin, consumerProperties, deadLetters);
    this.watchdog = new StallWatchdog(system, settings, admin, consumerProperties, ownership, journal,
        () -> stopped != null, silentAfter(settings, deadLetters.longestWait()), ticker);
    this.statusAndHealth = new PipelineStatus(settings, admin, consumerProperties, ownership, targets, journal, ticker);
    TopicPartitionCounts partitionCounts = new TopicPartitionCounts(admin, ticker);
    this.queries = new QueryRouter(system, settings, host, new PartitionDirectory(Membership.of(system), settings.name()),
        partitionCounts);
    this.cluster = new ClusterStatus(system, settings, partitionCounts, this::status);
  }

  /**
   * How long a batch in flight may go without a reply, retry or failure before the watchdog takes it as
   * hung: longer than any wait of a delivery, and than twice stall-timeout, by stall-timeout.
   */
  static Duration silentAfter(PipelineSettings settings, Duration deadLetterWait) {
    Duration longest = settings.stallTimeout().multipliedBy(2);
    for (Duration wait : List.of(settings.askTimeout().plus(settings.retryBackoff().max()),
        settings.handlerRetry().max().plus(settings.askTimeout()), deadLetterWait)) {
      longest = wait.compareTo(longest) > 0 ? wait : longest;
    }
    return longest.plus(settings.stallTimeout());
  }

  private PartitionOwnership ownership() {
    return ownership;
  }

  static GuaranteeStatement guarantee(ActorSystem<?> system, PipelineSettings settings) {
    List<String> journals = JournalWarmup.journalPlugins(system, settings).stream().map(id -> "[" + id + "]").toList();
    return GuaranteeStatement.of(settings.partitionActor(), journals.size() == 1 ? journals.get(0)
        : String.join(" or ", journals) + " (the one database holding the partition's history)");
  }

  static <V> Pipeline start(ActorSystem<?> system, Function<PartitionContext, ? extends PartitionActor<V, ?, ?>> factory,
      RecordDecoder<V> decoder, PipelineSettings settings) {
    RunningPipeline<V> p = new RunningPipeline<>(system, factory, decoder, settings);
    try {
      p.topicChecks.check();
      new TransactionChecks(settings, p.admin).check();
      p.decoder.configure(new HashMap<>(p.consumerProperties));   // its own copy: a deserializer may change it
      JournalWarmup.await(system, settings, settings.askTimeout());
      for (int i = 0; i < settings.partitionActor().journalDatabases(); i++) {
        FenceCheck.verify(system, settings.name(), settings.partitionActor().journalPluginId(i), settings.askTimeout());
      }
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
      p.queries.close();
      p.cluster.close();
      p.closeClients();
      p.decoder.close();
      throw e;
    }
    RunningPipelines.get(system).add(p);
    // Timers first: a stop (below, from coordinated shutdown) cancels them.
    p.watchdog.start();
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
    return statusAndHealth.status();
  }

  @Override
  public CompletionStage<List<PartitionView>> clusterStatus() {
    return stopped != null ? CompletableFuture.failedFuture(stoppedFailure()) : cluster.all();
  }

  @Override
  public PipelineHealth health() {
    return statusAndHealth.health(stopped != null);
  }

  @Override
  public <R> CompletionStage<QueryResult<R>> query(QueryTarget target, Query<R> query, QueryOptions options) {
    Objects.requireNonNull(target, "target");
    Objects.requireNonNull(query, "query");
    Objects.requireNonNull(options, "options");
    return stopped != null ? CompletableFuture.failedFuture(stoppedFailure()) : queries.query(target, query, options);
  }

  @Override
  public CompletionStage<PartitionId> partitionOf(QueryTarget target) {
    Objects.requireNonNull(target, "target");
    return stopped != null ? CompletableFuture.failedFuture(stoppedFailure()) : queries.partitionOf(target);
  }

  /** Retriable: the pipeline may run on another node, or here again. */
  private RetriableException stoppedFailure() {
    return new RetriableException("[" + settings.name() + "] pipeline was stopped on this node: it answers no "
        + "queries (ask a node where it runs)");
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
    watchdog.cancel();
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
      queries.close();
      cluster.close();
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
