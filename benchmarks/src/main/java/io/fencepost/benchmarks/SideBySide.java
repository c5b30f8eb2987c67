package io.fencepost.benchmarks;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Fencepost against its peers, in one invocation on one broker and one PostgreSQL server.
 *
 * <ul>
 *   <li>{@code quick}: every peer once on a small topic; checks only that each peer kept its promise
 *       (no loss, no duplicate where promised) and exits 1 otherwise. CI-sized, well under 2 minutes.
 *   <li>{@code full}: warm-up, every peer on the same pre-filled topic for records/s, every peer at one
 *       offered load for latency, then the partition, batch-size and record-size sweeps of Fencepost
 *       exactly-once; writes Markdown tables and SVG charts to the results directory, and exits 1
 *       if a peer broke its promise.
 *   <li>{@code profile}: only Fencepost exactly-once's throughput runs of {@code full}, under a JFR
 *       recording; writes {@code profile.md} (see {@link Profile}).
 *   <li>{@code latency}: only the {@code batch.max-latency} sweep of {@code full}, at a given offered
 *       load (after one discarded run that warms the JIT).
 *   <li>{@code outbox}: consume, apply, publish to another topic exactly once: Kafka Streams
 *       {@code exactly_once_v2} against Fencepost's exactly-once and at-least-once outbox relays on 48
 *       partitions (see {@link OutboxComparison}); writes {@code outbox.md} and exits 1 if a peer broke
 *       its promise ({@code outbox results quick}: a small CI-sized run).
 *   <li>{@code failover}: partition fail-over of a 3-node ledger cluster under a steady load, over
 *       SIGKILLs, SIGTERMs and restarts of its nodes (see {@link Failover}); writes {@code failover.md}
 *       and exits 1 if a partition never applied again.
 * </ul>
 *
 * <p>Run: {@code java -cp ... io.fencepost.benchmarks.SideBySide quick|full|profile [results-dir]}
 * (see benchmarks/results/README.md for the exact command).
 */
public final class SideBySide {

  private SideBySide() {
  }

  public static void main(String[] args) throws Exception {
    String mode = args.length > 0 ? args[0] : "quick";
    Path results = Path.of(args.length > 1 ? args[1] : "results");
    boolean ok = switch (mode) {
      case "quick" -> verdict(quick(System.out));
      case "full" -> full(Plan.full(), results, System.out);
      case "profile" -> {
        Profile.run(Plan.full(), results, System.out);
        yield true;
      }
      case "latency" -> latency(Plan.full(), Double.parseDouble(args.length > 2 ? args[2] : "50000"), results,
          System.out);
      case "snapshots" -> SnapshotLatency.run(Plan.full(), Double.parseDouble(args.length > 2 ? args[2] : "67900"),
          results, System.out);
      case "outbox" -> OutboxComparison.write("quick".equals(args.length > 2 ? args[2] : "full")
          ? OutboxComparison.Size.quick() : OutboxComparison.Size.full(), results, System.out);
      case "failover" -> Failover.run(results, args.length > 2 ? Integer.parseInt(args[2]) : Failover.DEFAULT_RUNS,
          System.out);
      default -> {
        System.err.println("usage: SideBySide quick|full|profile [results-dir] | latency results-dir records-per-second"
            + " | snapshots results-dir records-per-second | failover results-dir [runs]"
            + " | outbox results-dir [quick]");
        yield false;
      }
    };
    System.exit(ok ? 0 : 1);
  }

  /** The quick mode: every peer's result (the caller checks them). */
  static List<PeerResult> quick(PrintStream progress) throws Exception {
    try (Infrastructure infra = Infrastructure.start()) {
      return new Comparison(infra, Plan.quick(), progress).run();
    }
  }

  /** The full mode at the plan's sizes; returns whether every peer kept its promise. */
  static boolean full(Plan plan, Path results, PrintStream progress) throws Exception {
    long start = System.nanoTime();
    try (Infrastructure infra = Infrastructure.start()) {
      Machine machine = Machine.describe(infra);
      progress.println(machine.summary());
      List<PeerResult> comparison = new Comparison(infra, plan, progress).run();
      List<Sweep> sweeps = new Sweeps(infra, plan, progress).run();
      List<LatencySweep.Point> latencies = plan.measuresLatency()
          ? new LatencySweep(infra, plan, progress).run(Comparison.offeredLoad(comparison), false) : List.of();
      write(results, plan, machine, comparison, sweeps, latencies);
      progress.printf(Locale.ROOT, "%s run took %.1f minutes; results in %s%n",
          plan.name(), (System.nanoTime() - start) / 60e9, results.toAbsolutePath());
      return verdict(comparison);
    }
  }

  /** Only the batch.max-latency sweep, at a given offered load; returns whether nothing was lost or doubled. */
  static boolean latency(Plan plan, double offered, Path results, PrintStream progress) throws Exception {
    try (Infrastructure infra = Infrastructure.start()) {
      Machine machine = Machine.describe(infra);
      List<LatencySweep.Point> points = new LatencySweep(infra, plan, progress).run(offered, true);
      writeLatency(results, "latency", plan, machine, offered, points);
      return points.stream().allMatch(p -> p.outcome().duplicates() == 0 && p.outcome().losses() == 0);
    }
  }

  private static void writeLatency(Path dir, String mode, Plan plan, Machine machine, double offered,
      List<LatencySweep.Point> points) throws IOException {
    Files.createDirectories(dir);
    String md = String.format(Locale.ROOT, "batch.max-latency sweep of Fencepost exactly-once (one `%s` run; %s)%n%n"
        + "%s%n![latency](sweep-batch-latency.svg)%n", mode, machine.summary(),
        LatencySweep.table(points, offered, plan));
    Files.writeString(dir.resolve("sweep-batch-latency.md"), md);
    Files.writeString(dir.resolve("sweep-batch-latency.svg"), LatencySweep.chart(points));
    System.out.println(md);
  }

  private static void write(Path dir, Plan plan, Machine machine, List<PeerResult> comparison, List<Sweep> sweeps,
      List<LatencySweep.Point> latencies) throws IOException {
    Files.createDirectories(dir);
    double offered = Comparison.offeredLoad(comparison);
    Optional<Sweep> partitions = sweeps.stream().filter(s -> s.file().equals("sweep-partitions")).findFirst();
    String sideBySide = Report.sideBySide(plan, machine, comparison, offered) + "\n![records/s](side-by-side.svg)\n\n"
        + "Fencepost exactly-once against its targets:\n\n" + Report.targets(comparison, partitions);
    if (!latencies.isEmpty()) {
      LatencySweep.Point best = LatencySweep.best(latencies);
      double p99 = best.outcome().latency().p99Ms();
      sideBySide += String.format(Locale.ROOT, "%nWith a shorter batch timer (see [sweep-batch-latency.md]"
          + "(sweep-batch-latency.md)), the lowest p99 at the same offered load was %.1f ms (p50 %.1f ms) with "
          + "batch.max-latency = %d ms: the 25 ms target is %s.%n", p99, best.outcome().latency().p50Ms(),
          best.batchLatencyMs(), p99 <= 25 ? "met" : "**not met**");
      writeLatency(dir, plan.name(), plan, machine, offered, latencies);
    }
    Files.writeString(dir.resolve("side-by-side.md"), sideBySide);
    Files.writeString(dir.resolve("side-by-side.svg"), Report.sideBySideChart(plan, comparison));
    System.out.println(sideBySide);
    for (Sweep s : sweeps) {
      String md = String.format(Locale.ROOT, "%s sweep of Fencepost exactly-once (one `%s` run; %s)%n%n%s%n![%s](%s.svg)%n",
          s.title(), plan.name(), machine.summary(), Report.sweep(s), s.title(), s.file());
      Files.writeString(dir.resolve(s.file() + ".md"), md);
      Files.writeString(dir.resolve(s.file() + ".svg"), Report.sweepChart(s));
      System.out.println(md);
    }
  }

  private static boolean verdict(List<PeerResult> results) {
    System.out.print(Report.verdicts(results));
    return results.stream().allMatch(PeerResult::keptPromise);
  }
}
