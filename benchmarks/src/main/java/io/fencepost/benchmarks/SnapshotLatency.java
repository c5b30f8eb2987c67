package io.fencepost.benchmarks;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

import io.fencepost.DeliveryMode;

/**
 * What snapshots cost the tail: Fencepost exactly-once at one offered load with a snapshot every
 * {@value #OFTEN} writes of a partition against practically none ({@value #NEVER}), the two
 * alternating {@value #ROUNDS} times in one run (a discarded warm-up run first), compared by the
 * median p99.9 of each.
 */
final class SnapshotLatency {

  static final int OFTEN = 200;
  static final int NEVER = 1_000_000;
  static final int ROUNDS = 3;

  private SnapshotLatency() {
  }

  /** One run: the snapshot interval and what it measured. */
  record Point(int snapshotEvery, Comparison.Paced paced) {
  }

  static boolean run(Plan plan, double offered, Path results, PrintStream progress) throws Exception {
    List<Point> points = new ArrayList<>();
    Machine machine;
    try (Infrastructure infra = Infrastructure.start()) {
      machine = Machine.describe(infra);
      point(infra, plan, offered, NEVER, progress, "warm-up (discarded)");
      for (int round = 1; round <= ROUNDS; round++) {
        for (int every : new int[] {OFTEN, NEVER}) {
          points.add(point(infra, plan, offered, every, progress, "round " + round));
        }
      }
    }
    String md = report(plan, machine, offered, points);
    Files.createDirectories(results);
    Files.writeString(results.resolve("snapshot-latency.md"), md);
    System.out.println(md);
    return points.stream().allMatch(p -> p.paced().outcome().duplicates() == 0 && p.paced().outcome().losses() == 0);
  }

  private static Point point(Infrastructure infra, Plan plan, double offered, int every, PrintStream progress,
      String label) throws Exception {
    FencepostPeer peer = new FencepostPeer(DeliveryMode.EXACTLY_ONCE, Comparison.BATCH_RECORDS, false)
        .withSnapshotEvery(every);
    Comparison.Paced paced = Comparison.paced(infra, plan, "bench-snapshot-latency", offered, run -> {
      infra.quiesce();
      return peer.run(run);
    });
    Latency l = paced.outcome().latency();
    progress.printf(Locale.ROOT, "%-20s snapshot-every %,9d at %,.0f/s: p50 %.0f, p99 %.0f, p99.9 %.0f, max %.0f ms, "
        + "dup %d, loss %d%n", label, every, offered, l.p50Ms(), l.p99Ms(), l.p999Ms(), l.maxMs(),
        paced.outcome().duplicates(), paced.outcome().losses());
    return new Point(every, paced);
  }

  private static String report(Plan plan, Machine machine, double offered, List<Point> points) throws IOException {
    StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "Snapshots and the latency tail, one `snapshots` "
        + "run (%s). Fencepost exactly-once, %d partitions, offered %,.0f records/s, batch %,d / %d ms; each run "
        + "measures %d s after a %d s warm-up; the two settings alternate, after one discarded run.%n%n",
        machine.summary(), plan.partitions(), offered, Comparison.BATCH_RECORDS,
        FencepostPeer.BATCH_LATENCY.toMillis(), plan.latencyRun().toSeconds(),
        plan.latencyRun().dividedBy(4).toSeconds()));
    sb.append("| run | snapshot-every | achieved records/s | CPU | p50 ms | p99 ms | p99.9 ms | max ms | WAL bytes / record "
        + "| dup | loss |\n");
    sb.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    int i = 0;
    for (Point p : points) {
      Latency l = p.paced().outcome().latency();
      Outcome o = p.paced().outcome();
      sb.append(String.format(Locale.ROOT, "| %d | %,d | %,.0f | %.0f%% | %.0f | %.0f | %.0f | %.0f | %,.0f | %d | %d |%n",
          ++i / 2 + i % 2, p.snapshotEvery(), p.paced().achievedRate(), 100 * p.paced().cpuMean(), l.p50Ms(), l.p99Ms(),
          l.p999Ms(), l.maxMs(), (double) o.database().walBytes() / o.records(), o.duplicates(), o.losses()));
    }
    double often = medianP999(points, OFTEN);
    double never = medianP999(points, NEVER);
    sb.append(String.format(Locale.ROOT, "%nMedian p99.9: %.0f ms with a snapshot every %d writes, %.0f ms with "
        + "none: **%.2f ×** (target ≤ 2 ×: %s).%n", often, OFTEN, never, often / never,
        often <= 2 * never ? "met" : "**not met**"));
    return sb.toString();
  }

  private static double medianP999(List<Point> points, int every) {
    List<Double> values = points.stream().filter(p -> p.snapshotEvery() == every)
        .map(p -> p.paced().outcome().latency().p999Ms()).sorted(Comparator.naturalOrder()).toList();
    return values.get(values.size() / 2);
  }
}
