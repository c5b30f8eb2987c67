package io.fencepost.benchmarks;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import io.fencepost.kafka.OutboxSettings;

/**
 * Consume, apply, publish to another topic exactly once, as a {@code read_committed} consumer of that
 * topic sees it: Kafka Streams {@code exactly_once_v2} (count and sum per merchant), Fencepost with its
 * exactly-once outbox relay, and Fencepost with its at-least-once relay, side by side on one broker
 * and one PostgreSQL server. Each runs on the same pre-filled topic as fast as it goes (repeated,
 * round-robin, after a warm-up), then on a fresh topic fed at one offered load (half of the slowest
 * peer's median rate) for the end-to-end latency: record timestamp to visible to the
 * {@code read_committed} consumer. Writes {@code outbox.md}.
 */
final class OutboxComparison {

  /**
   * How big a run is.
   *
   * @param name {@code quick} or {@code full}
   * @param records payments on the pre-filled topic
   * @param partitions of every topic (input and output)
   * @param warmupRecords records of the warm-up topic each peer runs on once first (0: none)
   * @param repetitions throughput runs per peer
   * @param latencyRun how long a latency run measures after its warm-up of a quarter of that (zero: none)
   */
  record Size(String name, int records, int partitions, int warmupRecords, int repetitions, Duration latencyRun) {

    /** CI-sized: each peer once on a small topic, correctness only. */
    static Size quick() {
      return new Size("quick", 10_000, 4, 0, 1, Duration.ZERO);
    }

    /** The numbers: 48 partitions; about 10 minutes on 2 cores. */
    static Size full() {
      return new Size("full", 200_000, 48, 100_000, 3, Duration.ofSeconds(20));
    }

    Plan plan() {
      return new Plan(name, records, partitions, 150, 0, 0, warmupRecords, 1, repetitions, latencyRun, 0);
    }
  }

  /** One peer's runs: throughput (with the footprint of each run) and latency. */
  record Result(Peer peer, Repeated throughput, Map<Outcome, Footprint> footprints, double offered,
      Comparison.Paced latency) {

    /** The footprint of the median throughput run. */
    Footprint footprint() {
      return footprints.get(throughput.median());
    }

    boolean keptPromise() {
      return throughput.keptBy(peer.promise()) && throughput.allApplied()
          && (latency == null || peer.promise().keptBy(latency.outcome()));
    }
  }

  private final Infrastructure infra;
  private final Size size;
  private final PrintStream progress;

  OutboxComparison(Infrastructure infra, Size size, PrintStream progress) {
    this.infra = infra;
    this.size = size;
    this.progress = progress;
  }

  /** Kafka Streams first, then Fencepost exactly-once and at-least-once. */
  static List<Peer> peers() {
    return List.of(new KafkaStreamsPeer(), new OutboxPeer(OutboxSettings.Delivery.EXACTLY_ONCE),
        new OutboxPeer(OutboxSettings.Delivery.AT_LEAST_ONCE));
  }

  List<Result> run() throws Exception {
    List<Peer> peers = peers();
    if (size.warmupRecords() > 0) {
      Workload warmup = new Workload(size.warmupRecords(), 150);
      String topic = infra.newTopic("bench-outbox-warmup", size.partitions());
      warmup.produce(infra.bootstrapServers(), topic);
      for (Peer peer : peers) {
        Comparison.timed(infra, progress, "warm-up", peer, Run.prefilled(infra, topic, size.partitions(), warmup));
      }
      infra.deleteTopics(topic);
    }
    Workload workload = new Workload(size.records(), 150);
    String topic = infra.newTopic("bench-outbox-payments", size.partitions());
    workload.produce(infra.bootstrapServers(), topic);
    List<List<Outcome>> runs = new ArrayList<>();
    List<Map<Outcome, Footprint>> footprints = new ArrayList<>();
    peers.forEach(p -> {
      runs.add(new ArrayList<>());
      footprints.add(new IdentityHashMap<>());
    });
    for (int round = 0; round < size.repetitions(); round++) {
      for (int i = 0; i < peers.size(); i++) {
        Outcome o = Comparison.timed(infra, progress, "throughput", peers.get(i),
            Run.prefilled(infra, topic, size.partitions(), workload));
        Footprint f = footprint(peers.get(i));
        progress.printf("%-10s %-15s %s%n", "", "", f);
        runs.get(i).add(o);
        footprints.get(i).put(o, f);
      }
    }
    List<Repeated> throughput = runs.stream().map(Repeated::new).toList();
    double offered = offeredLoad(throughput);
    List<Result> results = new ArrayList<>();
    for (int i = 0; i < peers.size(); i++) {
      Peer peer = peers.get(i);
      Comparison.Paced latency = size.latencyRun().isZero() ? null
          : Comparison.paced(infra, size.plan(), "bench-outbox-latency", offered,
              run -> Comparison.timed(infra, progress, "latency", peer, run));
      results.add(new Result(peer, throughput.get(i), footprints.get(i), offered, latency));
    }
    return results;
  }

  /** Half of the slowest peer's median rate, rounded down to 100 records/s. */
  static double offeredLoad(List<Repeated> throughput) {
    double slowest = throughput.stream().mapToDouble(Repeated::rate).min().orElseThrow();
    return Math.floor(slowest / 2 / 100) * 100;
  }

  private static Footprint footprint(Peer peer) {
    return peer instanceof OutboxPeer o ? o.footprint() : ((KafkaStreamsPeer) peer).footprint();
  }

  /** The table, the targets and how the figures were taken. */
  static String report(Size size, Machine machine, List<Result> results) {
    StringBuilder sb = new StringBuilder();
    sb.append(String.format(Locale.ROOT, "Exactly-once to another topic, one `%s` run: %,d records of 150 bytes (%,d "
        + "merchants as record keys) on %d partitions, output topics of %d partitions; %s.%n%n", size.name(),
        size.records(), Workload.MERCHANTS, size.partitions(), size.partitions(), machine.summary()));
    sb.append("| peer | records/s (median) | min – max | transactions/s | Kafka producers | threads | p50 ms | p99 ms "
        + "| inputs visible | copies | missing |\n");
    sb.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (Result r : results) {
      Outcome t = r.throughput().median();
      Footprint f = r.footprint();
      Latency l = r.latency() == null ? null : r.latency().outcome().latency();
      sb.append(String.format(Locale.ROOT, "| %s | %,.0f | %,.0f – %,.0f | %,.1f | %d | %d | %s | %s | %,d | %d | %d |%n",
          r.peer().description(), t.rate(), r.throughput().minRate(), r.throughput().maxRate(),
          f.transactionsPerSecond(t.seconds()), f.producers(), f.threads(), l == null ? "—" : ms(l.p50Ms()),
          l == null ? "—" : ms(l.p99Ms()), t.applied(), r.throughput().duplicates(), r.throughput().losses()));
    }
    sb.append(String.format(Locale.ROOT, "%nrecords/s: median of %d runs on the pre-filled topic (round-robin over the "
        + "peers, after one warm-up run each on %,d other records), from all input partitions assigned to the last "
        + "input's output visible to a read_committed consumer. Transactions, producers and threads: the median run's, "
        + "sampled before the peer stopped; threads are those the peer started (its consumers, producers, actor system "
        + "or stream threads). Inputs visible: payments a read_committed consumer of the output topic sees in the "
        + "median run, copies included (Kafka Streams writes running totals per merchant, its record cache folding "
        + "many inputs into one record, counted by the final totals; Fencepost announces every payment in a record of "
        + "its own, counted per payment id); copies and missing: over all runs.%n%n", size.repetitions(), size.warmupRecords()));
    if (results.get(0).latency() != null) {
      sb.append(String.format(Locale.ROOT, "Latency: record timestamp (producer send, linger.ms %d) to the effect "
          + "visible to a read_committed consumer of the output topic, every peer on a fresh topic fed at %,.0f "
          + "records/s (half of the slowest peer's median rate) for %d s; only the last %d s count.%n%n",
          PacedProducer.LINGER_MS, results.get(0).offered(), size.latencyRun().plus(size.latencyRun().dividedBy(4))
              .toSeconds(), size.latencyRun().toSeconds()));
    }
    sb.append(targets(results));
    return sb.toString();
  }

  /** The targets: exactly-once end to end against Kafka Streams, and the exactly-once relay against the at-least-once one. */
  static String targets(List<Result> results) {
    Result streams = results.get(0);
    Result eo = results.get(1);
    Result alo = results.get(2);
    double vsStreams = eo.throughput().rate() / streams.throughput().rate();
    double vsAlo = eo.throughput().rate() / alo.throughput().rate();
    StringBuilder sb = new StringBuilder("Targets:\n\n");
    sb.append(String.format(Locale.ROOT, "- exactly-once end to end ≥ 1.0× Kafka Streams EOS records/s: %.2f× — %s%n",
        vsStreams, vsStreams >= 1.0 ? "met" : "**not met**"));
    if (eo.latency() != null && streams.latency() != null) {
      double eoP99 = eo.latency().outcome().latency().p99Ms();
      double ksP99 = streams.latency().outcome().latency().p99Ms();
      sb.append(String.format(Locale.ROOT, "- end-to-end p99 ≤ Kafka Streams' p99: %s ms against %s ms — %s%n",
          ms(eoP99), ms(ksP99), eoP99 <= ksP99 ? "met" : "**not met**"));
    }
    sb.append(String.format(Locale.ROOT, "- the exactly-once relay costs ≤ 15%% of the at-least-once relay's records/s: "
        + "%.0f%% — %s%n", 100 * (1 - vsAlo), vsAlo >= 0.85 ? "met" : "**not met**"));
    return sb.toString();
  }

  /** The quick size's results, without writing anything (the caller checks them). */
  static List<Result> quick(PrintStream progress) throws Exception {
    try (Infrastructure infra = Infrastructure.start()) {
      return new OutboxComparison(infra, Size.quick(), progress).run();
    }
  }

  /** Runs the comparison and writes {@code outbox.md}; returns whether every peer kept its promise. */
  static boolean write(Size size, Path results, PrintStream progress) throws Exception {
    try (Infrastructure infra = Infrastructure.start()) {
      Machine machine = Machine.describe(infra);
      progress.println(machine.summary());
      List<Result> comparison = new OutboxComparison(infra, size, progress).run();
      String md = report(size, machine, comparison);
      Files.createDirectories(results);
      Files.writeString(results.resolve("outbox.md"), md);
      progress.println(md);
      return comparison.stream().allMatch(Result::keptPromise);
    }
  }

  private static String ms(double v) {
    return String.format(Locale.ROOT, "%.1f", v);
  }
}
