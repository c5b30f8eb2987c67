package io.fencepost.benchmarks;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import io.fencepost.DeliveryMode;

/**
 * The side-by-side comparison: every peer on the same pre-filled topic as fast as it goes (repeated,
 * round-robin over the peers), then every peer on a fresh topic of its own fed by a
 * {@link PacedProducer} at one fixed offered load (half of Fencepost exactly-once's median rate) for
 * the latency percentiles in steady state (see {@link LatencyProbe}).
 */
final class Comparison {

  /** The batch size of the Fencepost peers (the pipeline's default). */
  static final int BATCH_RECORDS = 1000;

  private final Infrastructure infra;
  private final Plan plan;
  private final PrintStream progress;

  Comparison(Infrastructure infra, Plan plan, PrintStream progress) {
    this.infra = infra;
    this.plan = plan;
    this.progress = progress;
  }

  /** The peers, in the order they run. */
  List<Peer> peers() {
    return List.of(new RawConsumerPeer(), new ConnectorsPeer(), new NaiveInboxPeer(1, plan.inboxPerRecord()),
        new NaiveInboxPeer(100, plan.inboxPerHundred()), new KafkaStreamsPeer(),
        new FencepostPeer(DeliveryMode.EXACTLY_ONCE, BATCH_RECORDS, true),
        new FencepostPeer(DeliveryMode.AT_LEAST_ONCE, BATCH_RECORDS, true),
        new FencepostPeer(DeliveryMode.AT_MOST_ONCE, BATCH_RECORDS, true));
  }

  /** Runs everything; returns one result per peer. */
  List<PeerResult> run() throws Exception {
    List<Peer> peers = peers();
    if (plan.warmupRecords() > 0) {
      warmUp(peers);
    }
    Workload workload = new Workload(plan.records(), plan.recordBytes());
    String topic = infra.newTopic("bench-payments", plan.partitions());
    workload.produce(infra.bootstrapServers(), topic);
    progress.printf(Locale.ROOT, "produced %,d records of %d bytes to %s (%d partitions)%n", workload.records(),
        workload.recordBytes(), topic, plan.partitions());
    List<List<Outcome>> runs = new ArrayList<>();
    peers.forEach(p -> runs.add(new ArrayList<>()));
    for (int round = 0; round < plan.repetitions(); round++) {
      for (int i = 0; i < peers.size(); i++) {
        runs.get(i).add(timed("throughput", peers.get(i), Run.prefilled(infra, topic, plan.partitions(), workload)));
      }
    }
    List<Repeated> throughput = runs.stream().map(Repeated::new).toList();
    double offered = offeredLoad(throughput.get(indexOfFencepostEo(peers)));
    List<PeerResult> results = new ArrayList<>();
    for (int i = 0; i < peers.size(); i++) {
      results.add(plan.measuresLatency() ? withLatency(peers.get(i), throughput.get(i), offered)
          : new PeerResult(peers.get(i), throughput.get(i), null, "not measured in " + plan.name() + " mode"));
    }
    return results;
  }

  /** The one offered load of every latency run: half of Fencepost exactly-once's rate, rounded down to 100. */
  static double offeredLoad(Repeated fencepostEo) {
    return Math.floor(fencepostEo.rate() / 2 / 100) * 100;
  }

  /** The offered load of a finished comparison. */
  static double offeredLoad(List<PeerResult> results) {
    return offeredLoad(results.get(indexOfFencepostEo(results.stream().map(PeerResult::peer).toList())).throughput());
  }

  private static int indexOfFencepostEo(List<Peer> peers) {
    for (int i = 0; i < peers.size(); i++) {
      if (peers.get(i).name().equals("fencepost-eo")) {
        return i;
      }
    }
    throw new IllegalStateException("no fencepost-eo peer");
  }

  private void warmUp(List<Peer> peers) throws Exception {
    Workload workload = new Workload(plan.warmupRecords(), plan.recordBytes());
    String topic = infra.newTopic("bench-warmup", plan.partitions());
    workload.produce(infra.bootstrapServers(), topic);
    for (int round = 0; round < plan.warmupRounds(); round++) {
      for (Peer peer : peers) {
        if (!(peer instanceof NaiveInboxPeer)) {
          timed("warm-up", peer, Run.prefilled(infra, topic, plan.partitions(), workload));
        }
      }
    }
  }

  /** The peer's latency run at the common offered load (see {@link #paced}); skipped when saturated. */
  private PeerResult withLatency(Peer peer, Repeated throughput, double offered) throws Exception {
    if (throughput.rate() < offered * 1.05) {
      String note = String.format(Locale.ROOT, "saturated: its maximum %,.0f/s is below the offered %,.0f/s",
          throughput.rate(), offered);
      progress.printf("%-10s %-15s skipped (%s)%n", "latency", peer.name(), note);
      return new PeerResult(peer, throughput, null, note);
    }
    Paced p = paced(infra, plan, "bench-latency-" + peer.name(), offered, run -> timed("latency", peer, run));
    return new PeerResult(peer, throughput, p.outcome(), String.format(Locale.ROOT,
        "offered %,.0f/s, achieved %,.0f/s, machine CPU %.0f%% meanwhile", offered, p.achievedRate(),
        100 * p.cpuMean()));
  }

  /** Runs a peer on a {@link Run}. */
  interface RunOnce {
    Outcome run(Run run) throws Exception;
  }

  /** A latency run's outcome, the producer's achieved rate and the machine's mean CPU load meanwhile. */
  record Paced(Outcome outcome, double achievedRate, double cpuMean) {
  }

  /**
   * A latency run: a fresh topic fed at {@code offered} records/s for the plan's latency run plus a
   * warm-up of a quarter of it; only records done after the warm-up are measured.
   */
  static Paced paced(Infrastructure infra, Plan plan, String topicPrefix, double offered, RunOnce runOnce)
      throws Exception {
    Duration warmup = plan.latencyRun().dividedBy(4);
    Duration length = plan.latencyRun().plus(warmup);
    Workload workload = new Workload((int) (offered * length.toMillis() / 1000), plan.recordBytes());
    String topic = infra.newTopic(topicPrefix, plan.partitions());
    PacedProducer producer = new PacedProducer(infra.bootstrapServers(), topic, workload, offered);
    try (CpuLoad cpu = CpuLoad.start()) {
      Outcome o = runOnce.run(Run.paced(infra, topic, plan.partitions(), producer, warmup));
      producer.await(Consumers.RUN_TIMEOUT);
      infra.deleteTopics(topic);
      return new Paced(o, producer.achievedRate(), cpu.mean());
    }
  }

  /** Lets the disks settle, runs the peer and prints one line about it. */
  private Outcome timed(String phase, Peer peer, Run run) throws Exception {
    return timed(infra, progress, phase, peer, run);
  }

  /** Lets the disks settle, runs the peer and prints one line about it to {@code progress}. */
  static Outcome timed(Infrastructure infra, PrintStream progress, String phase, Peer peer, Run run) throws Exception {
    infra.quiesce();
    long start = System.nanoTime();
    Outcome o = peer.run(run);
    progress.printf(Locale.ROOT, "%-10s %-15s %,9d records in %6.2f s = %,9.0f/s, dup %d, loss %d%s (%.0f s with "
        + "set-up and checks)%n", phase, peer.name(), o.records(), o.seconds(), o.rate(), o.duplicates(), o.losses(),
        o.latency() == null ? "" : String.format(Locale.ROOT, ", p50 %.1f ms, p99 %.1f ms", o.latency().p50Ms(),
            o.latency().p99Ms()), (System.nanoTime() - start) / 1e9);
    return o;
  }
}
