package io.fencepost.benchmarks;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.DeliveryMode;
import io.fencepost.PartitionActorSettings;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.embedded.ClusterNodes;
import io.fencepost.reconciliation.Reconciliation;
import io.fencepost.reconciliation.ReconciliationReport;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Fencepost's Kafka pipeline on a one-node cluster with its journal on PostgreSQL, running
 * {@link CreditingActor} in one delivery mode with a given batch size. Done when every partition
 * actor's stored next offset has reached the end of its partition. Duplicates and losses come from
 * {@link Reconciliation} (topic against journal, per business key) or, for sweep points, from the
 * actors' applied-record counters. Latency is core's {@code fencepost.effect.latency}.
 */
final class FencepostPeer implements Peer {

  /** The pipeline's {@code batch.max-latency} (its reference.conf default). */
  static final Duration BATCH_LATENCY = Duration.ofMillis(20);

  private final DeliveryMode mode;
  private final int batchRecords;
  private final boolean reconcile;
  private final Duration batchLatency;
  // The partition actors' snapshot-every; 0: the configured one.
  private int snapshotEvery;

  /**
   * @param batchRecords the pipeline's {@code batch.max-records}
   * @param reconcile whether to reconcile the journal against the topic per business key
   */
  FencepostPeer(DeliveryMode mode, int batchRecords, boolean reconcile) {
    this(mode, batchRecords, reconcile, BATCH_LATENCY);
  }

  /** @param batchLatency the pipeline's {@code batch.max-latency} */
  FencepostPeer(DeliveryMode mode, int batchRecords, boolean reconcile, Duration batchLatency) {
    this.mode = mode;
    this.batchRecords = batchRecords;
    this.reconcile = reconcile;
    this.batchLatency = batchLatency;
  }

  /** This peer with the partition actors' {@code snapshot-every} set. */
  FencepostPeer withSnapshotEvery(int writes) {
    FencepostPeer copy = new FencepostPeer(mode, batchRecords, reconcile, batchLatency);
    copy.snapshotEvery = writes;
    return copy;
  }

  @Override
  public String name() {
    return "fencepost-" + switch (mode) {
      case EXACTLY_ONCE -> "eo";
      case AT_LEAST_ONCE -> "alo";
      case AT_MOST_ONCE -> "amo";
    };
  }

  @Override
  public String description() {
    return String.format(Locale.ROOT, "Fencepost %s, journal on PostgreSQL (batch %,d / %d ms)", mode.configValue(),
        batchRecords, batchLatency.toMillis());
  }

  @Override
  public Promise promise() {
    return switch (mode) {
      case EXACTLY_ONCE -> Promise.EXACTLY_ONCE;
      case AT_LEAST_ONCE -> Promise.AT_LEAST_ONCE;
      case AT_MOST_ONCE -> Promise.AT_MOST_ONCE;
    };
  }

  @Override
  public Outcome run(Run run) throws Exception {
    FencepostLatency.install();
    JournalDatabase db = run.infra().newDatabase("bench_fencepost");
    DbUsage before = DbUsage.sample(db);
    String group = run.infra().uniqueName("bench-" + name());
    if (run.latency()) {
      run.probe().follow(() -> FencepostLatency.timer(group));
    }
    int records = records(run.workload());
    Progress progress = new Progress();
    List<PartitionView> views = List.of();
    Config config = ClusterNodes.node("bench-fencepost", 0, List.of()).withFallback(db.pekkoConfig())
        .withFallback(ConfigFactory.parseString("pekko.loglevel = WARNING")).withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "bench-fencepost", config);
    try {
      ClusterNodes.joinSelf(system, Duration.ofSeconds(30));
      PipelineSettings base = PipelineSettings.create(system, "bench")
          .withBootstrapServers(run.infra().bootstrapServers()).withTopics(List.of(run.topic())).withGroupId(group)
          .withBatch(batchRecords, batchLatency)
          .withKafkaClient(ConsumerConfig.RECEIVE_BUFFER_CONFIG, Consumers.RECEIVE_BUFFER_BYTES);
      PartitionActorSettings actors = base.partitionActor().withDeliveryMode(mode);
      PipelineSettings settings = base.withPartitionActor(snapshotEvery > 0 ? actors.withSnapshotEvery(snapshotEvery)
          : actors);
      Heap.resetPeak();
      Pipeline pipeline = KafkaPipeline.create(system, ctx -> new CreditingActor(ctx, progress),
          new CreditingActor.PaymentDeserializer(), settings).start();
      views = awaitApplied(pipeline, run, records, progress);
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
    long peak = Heap.peakMib();
    DbUsage usage = DbUsage.settled(db).minus(before);
    Latency latency = run.latency() ? run.probe().steady() : null;
    if (reconcile) {
      ReconciliationReport report = Reconciliation.of(run.infra().bootstrapServers(), run.topic(), group, db)
          .inputKeys(r -> Optional.of(Payment.parse(r.value()).businessKey()))
          .effectKeys(e -> e instanceof CreditingActor.Credit c ? Optional.of(c.paymentId()) : Optional.empty())
          .run();
      long doubled = report.total().doubled();
      return new Outcome(records, report.total().applied() + doubled, doubled, report.total().missing(),
          progress.seconds(), peak, usage, latency, "journal reconciled against the topic per payment id");
    }
    long applied = views.stream().mapToLong(PartitionView::appliedRecords).sum();
    return new Outcome(records, applied, Math.max(0, applied - records), Math.max(0, records - applied),
        progress.seconds(), peak, usage, latency, "applied-record counters of the partition actors");
  }

  /** Polls the actors until their stored offsets cover the topic; returns their last views. */
  private static List<PartitionView> awaitApplied(Pipeline pipeline, Run run, int records, Progress progress)
      throws Exception {
    boolean ready = false;
    long deadline = System.nanoTime() + Consumers.RUN_TIMEOUT.toNanos();
    while (true) {
      List<PartitionView> views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
      if (!ready && views.size() == run.partitions()) {
        ready = true;
        progress.started();
        run.ready();
      }
      long next = views.stream().mapToLong(v -> v.nextOffset().orElse(0)).sum();
      if (next >= records || System.nanoTime() > deadline) {
        progress.finished();
        return views;
      }
      Thread.sleep(50);
    }
  }
}
