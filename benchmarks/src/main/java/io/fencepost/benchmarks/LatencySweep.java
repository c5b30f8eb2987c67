package io.fencepost.benchmarks;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

import io.fencepost.DeliveryMode;

/**
 * Fencepost exactly-once's end-to-end latency at the side-by-side run's offered load (half of its
 * maximum rate) for several {@code batch.max-latency} values: below saturation a batch is closed by
 * its timer, not by {@code max-records}, so the timer sets the floor of the latency, and shorter
 * timers mean more (smaller) journal writes.
 */
final class LatencySweep {

  /** The values tried, in milliseconds; 20 is the pipeline's default. */
  static final int[] BATCH_LATENCY_MS = {2, 5, 10, 20};

  /** One value's latency run. */
  record Point(int batchLatencyMs, Outcome outcome) {
  }

  private final Infrastructure infra;
  private final Plan plan;
  private final PrintStream progress;

  LatencySweep(Infrastructure infra, Plan plan, PrintStream progress) {
    this.infra = infra;
    this.plan = plan;
    this.progress = progress;
  }

  /**
   * @param coldJvm whether this JVM has not run Fencepost yet: one discarded run at the default timer
   *     first, else the first point would be measured while the JIT still compiles the hot path
   */
  List<Point> run(double offered, boolean coldJvm) throws Exception {
    if (coldJvm) {
      Point discarded = point(offered, 20);
      progress.printf(Locale.ROOT, "warm-up    batch.max-latency 20 ms at %,.0f/s: p99 %.1f ms (discarded)%n", offered,
          discarded.outcome().latency().p99Ms());
    }
    List<Point> points = new ArrayList<>();
    for (int ms : BATCH_LATENCY_MS) {
      Point p = point(offered, ms);
      Outcome o = p.outcome();
      points.add(p);
      progress.printf(Locale.ROOT, "sweep      batch.max-latency %d ms at %,.0f/s: p50 %.1f ms, p99 %.1f ms, "
          + "%.2f journal rows / 100 records, dup %d, loss %d%n", ms, offered, o.latency().p50Ms(), o.latency().p99Ms(),
          100.0 * o.database().journalRows() / o.records(), o.duplicates(), o.losses());
    }
    return points;
  }

  private Point point(double offered, int ms) throws Exception {
    FencepostPeer peer = new FencepostPeer(DeliveryMode.EXACTLY_ONCE, Comparison.BATCH_RECORDS, false,
        Duration.ofMillis(ms));
    return new Point(ms, Comparison.paced(infra, plan, "bench-latency-sweep", offered, run -> {
      infra.quiesce();
      return peer.run(run);
    }).outcome());
  }

  /** The sweep as a Markdown table. */
  static String table(List<Point> points, double offered, Plan plan) {
    StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "Offered load %,.0f records/s (half of Fencepost "
        + "exactly-once's maximum), %d partitions, batch.max-records %,d; measured for %d s after a %d s warm-up.%n%n",
        offered, plan.partitions(), Comparison.BATCH_RECORDS, plan.latencyRun().toSeconds(),
        plan.latencyRun().dividedBy(4).toSeconds()));
    sb.append("| batch.max-latency | p50 ms | p99 ms | max ms | journal rows / 100 records | dup | loss |\n");
    sb.append("|---:|---:|---:|---:|---:|---:|---:|\n");
    for (Point p : points) {
      Outcome o = p.outcome();
      sb.append(String.format(Locale.ROOT, "| %d ms | %.1f | %.1f | %.1f | %.2f | %d | %d |%n", p.batchLatencyMs(),
          o.latency().p50Ms(), o.latency().p99Ms(), o.latency().maxMs(), 100.0 * o.database().journalRows() / o.records(),
          o.duplicates(), o.losses()));
    }
    return sb.toString();
  }

  /** p50 and p99 against batch.max-latency. */
  static String chart(List<Point> points) {
    List<String> labels = points.stream().map(p -> p.batchLatencyMs() + " ms").toList();
    return new LineChart("Fencepost exactly-once latency at half its maximum rate", "batch.max-latency", "ms", labels)
        .series("p50", points.stream().map(p -> p.outcome().latency().p50Ms()).toList())
        .series("p99", points.stream().map(p -> p.outcome().latency().p99Ms()).toList())
        .svg();
  }

  /** The lowest p99 of the sweep and the timer that gave it. */
  static Point best(List<Point> points) {
    return points.stream().min(Comparator.comparingDouble(p -> p.outcome().latency().p99Ms())).orElseThrow();
  }
}
