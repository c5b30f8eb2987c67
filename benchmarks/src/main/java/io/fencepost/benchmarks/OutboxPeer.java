package io.fencepost.benchmarks;

import java.time.Duration;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.FencepostMeters;
import io.fencepost.embedded.ClusterNodes;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.OutboxSettings;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Fencepost end to end to another topic: the pipeline (exactly-once effects, journal on PostgreSQL)
 * runs {@link CreditingActor} announcing each credit through the outbox, and the outbox relay
 * publishes the announcements in one delivery mode. Done when a {@code read_committed} consumer of
 * the output topic has seen every payment's announcement; copies and missing ones are counted from
 * what that consumer saw (each announcement's value is its payment id). Latency ends when an
 * announcement is visible to that consumer.
 */
final class OutboxPeer implements Peer {

  private final OutboxSettings.Delivery delivery;
  // The last run's transactions, producers and threads.
  private volatile Footprint footprint;

  OutboxPeer(OutboxSettings.Delivery delivery) {
    this.delivery = delivery;
  }

  @Override
  public String name() {
    return "fencepost-" + (delivery == OutboxSettings.Delivery.EXACTLY_ONCE ? "eo" : "alo") + "-relay";
  }

  @Override
  public String description() {
    return String.format(Locale.ROOT, "Fencepost exactly-once effects, journal on PostgreSQL (batch %,d / %d ms), "
        + "outbox relay %s", Comparison.BATCH_RECORDS, FencepostPeer.BATCH_LATENCY.toMillis(), delivery.value());
  }

  @Override
  public Promise promise() {
    return delivery == OutboxSettings.Delivery.EXACTLY_ONCE ? Promise.EXACTLY_ONCE : Promise.AT_LEAST_ONCE;
  }

  /** The last run's transactions, producers and threads (null before a run). */
  Footprint footprint() {
    return footprint;
  }

  @Override
  public Outcome run(Run run) throws Exception {
    JournalDatabase db = run.infra().newDatabase("bench_outbox");
    DbUsage before = DbUsage.sample(db);
    String group = run.infra().uniqueName("bench-" + name());
    String output = run.infra().newTopic(group + "-credited", run.partitions());
    int records = records(run.workload());
    Progress progress = new Progress();
    Visible visible = new Visible(records, run.latency() ? run.probe().recorder() : null, run.producer());
    OutputTopic<String> out = new OutputTopic<>(run.infra().bootstrapServers(), output, run.partitions(),
        new StringDeserializer());
    Thread follower = out.follow(visible, visible::complete);
    Config config = ClusterNodes.node("bench-outbox", 0, List.of()).withFallback(db.pekkoConfig())
        .withFallback(ConfigFactory.parseString("pekko.loglevel = WARNING")).withFallback(ConfigFactory.load());
    int threadsBefore = Footprint.liveThreads();
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "bench-outbox", config);
    SimpleMeterRegistry meters = new SimpleMeterRegistry();
    FencepostMeters.get(system).use(meters);
    Heap.resetPeak();
    try {
      ClusterNodes.joinSelf(system, Duration.ofSeconds(30));
      PipelineSettings base = PipelineSettings.create(system, "bench")
          .withBootstrapServers(run.infra().bootstrapServers()).withTopics(List.of(run.topic())).withGroupId(group)
          .withBatch(Comparison.BATCH_RECORDS, FencepostPeer.BATCH_LATENCY)
          .withKafkaClient(ConsumerConfig.RECEIVE_BUFFER_CONFIG, Consumers.RECEIVE_BUFFER_BYTES);
      PipelineSettings settings = base.withOutbox(base.outbox().withEnabled(true).withDelivery(delivery));
      Pipeline pipeline = KafkaPipeline.create(system, ctx -> new CreditingActor(ctx, progress, Optional.of(output)),
          new CreditingActor.PaymentDeserializer(), settings).start();
      awaitVisible(pipeline, run, visible, progress);
      footprint = Footprint.sample(transactions(meters), threadsBefore);
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      follower.join(Duration.ofSeconds(10).toMillis());   // it ends by itself once every announcement is seen
      follower.interrupt();
    }
    long peak = Heap.peakMib();
    DbUsage usage = DbUsage.settled(db).minus(before);
    long published = out.count();   // copies published after the last new announcement count too
    run.infra().deleteTopics(output);
    return new Outcome(records, published, published - visible.distinct(), records - visible.distinct(),
        progress.seconds(), peak, usage, run.latency() ? run.probe().steady() : null,
        "announcements read_committed from the output topic, per payment id");
  }

  /** Waits until every announcement is visible (or the run's time is up), starting the run once all partitions run. */
  private static void awaitVisible(Pipeline pipeline, Run run, Visible visible, Progress progress) throws Exception {
    long deadline = System.nanoTime() + Consumers.RUN_TIMEOUT.toNanos();
    boolean ready = false;
    while (!visible.complete() && System.nanoTime() < deadline) {
      if (!ready && pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS).size() == run.partitions()) {
        ready = true;
        progress.started();
        run.ready();
      }
      Thread.sleep(ready ? 5 : 50);
    }
    progress.finished();
  }

  private static long transactions(SimpleMeterRegistry meters) {
    return (long) meters.find("fencepost.outbox.relay.transactions").counters().stream()
        .mapToDouble(Counter::count).sum();
  }

  /** What the read_committed consumer of the output topic saw: announcements per payment id, and their latency. */
  private static final class Visible implements Consumer<ConsumerRecord<String, String>> {
    private final int records;
    private final Latency.Recorder latency;
    private final PacedProducer producer;
    private final BitSet ids;
    private volatile int distinct;

    Visible(int records, Latency.Recorder latency, PacedProducer producer) {
      this.records = records;
      this.latency = latency;
      this.producer = producer;
      this.ids = new BitSet(records);
    }

    @Override
    public void accept(ConsumerRecord<String, String> r) {
      int id = Integer.parseInt(r.value(), 1, r.value().length(), 10);
      if (!ids.get(id)) {
        ids.set(id);
        distinct++;
        if (latency != null) {
          latency.at(System.currentTimeMillis(), producer.sentAt(id));
        }
      }
    }

    boolean complete() {
      return distinct >= records;
    }

    int distinct() {
      return distinct;
    }
  }
}
