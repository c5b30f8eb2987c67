package io.fencepost.benchmarks;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

import io.fencepost.embedded.Directories;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka-to-Kafka counting job with {@code processing.guarantee=exactly_once_v2}: count and sum per
 * merchant ({@code groupByKey().aggregate}, state in RocksDB with a changelog) into an output topic.
 * Done when its consumer group (the application id) has committed the end of every input partition;
 * checked by reading the output read_committed (final count per merchant sums to the input).
 *
 * <p>Latency ends when a record's effect is visible to a read_committed consumer of the output
 * (its transaction committed). With the default record cache an output record carries a merchant's
 * count after several inputs (and the timestamp of the newest only), so each input is traced by
 * count: payments go round-robin over merchants, so the k-th payment of merchant m is payment
 * {@code m + MERCHANTS * (k - 1)}, and an output of count c for m makes all of m's payments up to
 * the c-th visible; their send times come from the paced producer.
 */
final class KafkaStreamsPeer implements Peer {

  /**
   * {@code num.stream.threads}: one per core, its best setting here (on 2 cores one thread ran about
   * 25% slower).
   */
  private static final int THREADS = Runtime.getRuntime().availableProcessors();

  // The last run's transactions, producers and threads.
  private volatile Footprint footprint;

  @Override
  public String name() {
    return "kstreams-eos";
  }

  @Override
  public String description() {
    return "Kafka Streams exactly_once_v2 count/sum per merchant to an output topic (" + THREADS + " stream thread"
        + (THREADS == 1 ? ")" : "s)");
  }

  @Override
  public Promise promise() {
    return Promise.EXACTLY_ONCE;
  }

  @Override
  public Outcome run(Run run) throws Exception {
    String appId = run.infra().uniqueName("bench-kstreams");
    String output = run.infra().newTopic(appId + "-totals", run.partitions());
    Path stateDir = Files.createTempDirectory("fencepost-kstreams-");
    Progress progress = new Progress();
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(run.topic(), Consumed.with(Serdes.String(), Serdes.String()))
        .groupByKey()
        .aggregate(() -> Totals.ZERO, (merchant, value, totals) -> {
          progress.started();
          return totals.plus(Payment.parse(value));
        }, Materialized.with(Serdes.String(), Totals.SERDE))
        .toStream()
        .to(output, Produced.with(Serdes.String(), Totals.SERDE));
    OutputTopic<Totals> out = new OutputTopic<>(run.infra().bootstrapServers(), output, run.partitions(),
        Totals.SERDE.deserializer());
    int records = records(run.workload());
    Latency.Recorder latency = run.latency() ? run.probe().recorder() : null;
    VisibleInputs visible = latency == null ? null : new VisibleInputs(run.producer(), latency);
    Thread follower = visible == null ? null : out.follow(visible, () -> visible.total() >= records);
    Heap.resetPeak();
    int threadsBefore = Footprint.liveThreads();
    KafkaStreams streams = new KafkaStreams(builder.build(), properties(run, appId, stateDir));
    AtomicBoolean ready = new AtomicBoolean();
    streams.setStateListener((now, before) -> {
      if (now == KafkaStreams.State.RUNNING && ready.compareAndSet(false, true)) {
        progress.started();
        run.ready();
      }
    });
    try {
      streams.start();
      awaitCommitted(run, appId, records);
      progress.finished();
      footprint = Footprint.sample(commits(streams), threadsBefore);
      if (follower != null) {
        follower.join(Duration.ofSeconds(30).toMillis());
        follower.interrupt();
      }
    } finally {
      streams.close(Duration.ofSeconds(30));
      streams.cleanUp();
      Directories.deleteRecursively(stateDir);
    }
    long peak = Heap.peakMib();
    long payments = 0;
    long cents = 0;
    for (Totals t : out.latest().values()) {
      payments += t.payments();
      cents += t.cents();
    }
    run.infra().deleteTopics(appId);
    if (payments == records && cents != run.workload().expectedCents()) {
      throw new IllegalStateException("output sums to " + cents + " cents, input to " + run.workload().expectedCents());
    }
    return new Outcome(records, payments, Math.max(0, payments - records), Math.max(0, records - payments),
        progress.seconds(), peak, null, latency == null ? null : run.probe().steady(),
        "final totals read_committed from the output topic");
  }

  /** The last run's transactions, producers and threads (null before a run). */
  Footprint footprint() {
    return footprint;
  }

  /** Commits of every stream thread so far: with exactly_once_v2 each is one transaction. */
  private static long commits(KafkaStreams streams) {
    double sum = 0;
    for (var metric : streams.metrics().values()) {
      if (metric.metricName().name().equals("commit-total")
          && metric.metricName().group().equals("stream-thread-metrics")) {
        sum += ((Number) metric.metricValue()).doubleValue();
      }
    }
    return (long) sum;
  }

  private Properties properties(Run run, String appId, Path stateDir) {
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, run.infra().bootstrapServers());
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, THREADS);
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.RECEIVE_BUFFER_CONFIG), Consumers.RECEIVE_BUFFER_BYTES);
    return p;
  }

  /** Waits until the application's group has committed offsets summing to the input's record count. */
  private static void awaitCommitted(Run run, String appId, int records) throws Exception {
    long deadline = System.nanoTime() + Consumers.RUN_TIMEOUT.toNanos();
    while (System.nanoTime() < deadline) {
      Map<TopicPartition, OffsetAndMetadata> committed = run.infra().admin().listConsumerGroupOffsets(appId)
          .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
      long sum = 0;
      for (OffsetAndMetadata o : committed.values()) {
        sum += o == null ? 0 : o.offset();
      }
      if (sum >= records) {
        return;
      }
      Thread.sleep(50);
    }
  }

  /** Records the latency of every input an output record makes visible (see the class comment). */
  private static final class VisibleInputs implements Consumer<ConsumerRecord<String, Totals>> {
    private final PacedProducer producer;
    private final Latency.Recorder latency;
    private final long[] visible = new long[Workload.MERCHANTS];
    private volatile long total;

    VisibleInputs(PacedProducer producer, Latency.Recorder latency) {
      this.producer = producer;
      this.latency = latency;
    }

    @Override
    public void accept(ConsumerRecord<String, Totals> r) {
      int merchant = Workload.merchantIndex(r.key());
      long now = System.currentTimeMillis();
      for (long k = visible[merchant] + 1; k <= r.value().payments(); k++) {
        latency.at(now, producer.sentAt((int) (merchant + Workload.MERCHANTS * (k - 1))));
      }
      if (r.value().payments() > visible[merchant]) {
        total += r.value().payments() - visible[merchant];
        visible[merchant] = r.value().payments();
      }
    }

    /** Inputs made visible so far. */
    long total() {
      return total;
    }
  }
}
