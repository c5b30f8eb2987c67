package io.fencepost.benchmarks;

import java.lang.management.ManagementFactory;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.IntStream;

import com.sun.management.OperatingSystemMXBean;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.benchmarks.Failover.FaultRun;
import io.fencepost.benchmarks.Failover.Gap;
import io.fencepost.benchmarks.Failover.JoinRun;
import io.fencepost.benchmarks.Failover.Kind;
import io.fencepost.examples.LedgerNode;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.ClusterNodes;

/** {@link Failover}'s results as Markdown tables against the targets, and its charts. */
final class FailoverReport {

  /** What the report says about the run and its settings. */
  record Setup(String command, String machine, Duration sessionTimeout, Duration heartbeat,
      String downing, Duration stableAfter, int runs, long payments) {
  }

  /**
   * Journal writes per second per node around one fault and the stopped node's restart.
   *
   * @param counts {@code counts[node][second]}; row {@code nodes} holds writes no log attributes
   */
  record Chart(String file, FaultRun fault, JoinRun join, int secondsBefore, long[][] counts) {
  }

  private FailoverReport() {
  }

  /** The setup: the machine, and the nodes' settings read from the configuration they read. */
  static Setup setup(String command, JournalDatabase db, int runs, long payments) throws SQLException {
    // Layered as LedgerNode.start layers it, without its flags and journal.
    Config config = ConfigFactory.defaultApplication()
        .withFallback(ClusterNodes.node(LedgerNode.SYSTEM_NAME, 0, List.of()))
        .withFallback(ConfigFactory.defaultReference())
        .resolve();
    return new Setup(command, machine(db), ledgerSetting(config, "kafka-clients.session.timeout.ms", 45_000),
        ledgerSetting(config, "kafka-clients.heartbeat.interval.ms", 3_000),
        config.getString("pekko.cluster.split-brain-resolver.active-strategy"),
        config.getDuration("pekko.cluster.split-brain-resolver.stable-after"), runs, payments);
  }

  /** A setting of the ledger pipeline: fencepost.pipelines.ledger over fencepost.pipeline, else Kafka's default. */
  private static Duration ledgerSetting(Config config, String key, long defaultMs) {
    for (String section : List.of("fencepost.pipelines." + Failover.GROUP + ".", "fencepost.pipeline.")) {
      if (config.hasPath(section + key)) {
        return key.endsWith(".ms") ? Duration.ofMillis(config.getLong(section + key))
            : config.getDuration(section + key);
      }
    }
    return Duration.ofMillis(defaultMs);
  }

  private static String machine(JournalDatabase db) throws SQLException {
    long memory = ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getTotalMemorySize();
    String postgres;
    try (Connection c = db.connect(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SHOW server_version")) {
      rs.next();
      postgres = "PostgreSQL " + rs.getString(1);
    }
    return String.format(Locale.ROOT, "%d cores, %d GiB RAM, %s %s, %s (embedded, fsync on, synchronous_commit "
        + "on); the broker, PostgreSQL, the %d ledger nodes (-Xmx512m each) and the producer all share this "
        + "machine, on loopback", Runtime.getRuntime().availableProcessors(), Math.round(memory / (double) (1L << 30)),
        System.getProperty("java.vm.name"), System.getProperty("java.runtime.version"), postgres, Failover.NODES);
  }

  static String markdown(Setup s, List<FaultRun> faults, List<JoinRun> joins, List<Chart> charts) {
    double session = s.sessionTimeout().toMillis() / 1e3;
    List<Double> killed = failovers(faults, Kind.SIGKILL);
    List<Double> stopped = failovers(faults, Kind.SIGTERM);
    Gap killGap = worst(faults, Kind.SIGKILL);
    Gap termGap = worst(faults, Kind.SIGTERM);
    Gap joinGap = joins.stream().map(JoinRun::others).reduce(Gap.NONE, Gap::max);
    StringBuilder sb = new StringBuilder("# Partition fail-over of a 3-node ledger cluster\n\n");
    sb.append(String.format(Locale.ROOT, "One `%s` run (the full command is in [README.md](README.md)); %s.%n%n",
        s.command(), s.machine()));
    sb.append(String.format(Locale.ROOT, "%d `fencepost ledger` nodes (separate JVMs, one Pekko cluster, consumer "
        + "group `%s`, journal on PostgreSQL) consume the %d partitions of `%s`, fed %,d payments/s for the whole run "
        + "(%,d payments). Each of the %d runs SIGKILLs one node, then SIGTERMs another (the stopped node rotates), "
        + "and restarts each %d s after its fault. `session.timeout.ms` %,d ms and `heartbeat.interval.ms` %,d ms "
        + "(the examples' application.conf); split-brain resolver %s with `stable-after` %d s (it decides "
        + "membership only: partition actors run where Kafka assigns their partitions).%n%n", Failover.NODES, Failover.GROUP, Failover.PARTITIONS, Failover.TOPIC,
        Failover.RATE, s.payments(), s.runs(), Failover.WINDOW.toSeconds(), s.sessionTimeout().toMillis(),
        s.heartbeat().toMillis(), s.downing(), s.stableAfter().toSeconds()));

    sb.append("## Against the targets\n\n| target | measured | met |\n|---|---:|---|\n");
    double killMedian = median(killed);
    double killMax = max(killed);
    double termMax = max(stopped);
    row(sb, String.format(Locale.ROOT, "SIGKILL: median fail-over ≤ session timeout + 3 s = %.1f s", session + 3),
        seconds(killMedian), killMedian <= session + 3);
    row(sb, String.format(Locale.ROOT, "SIGKILL: max fail-over ≤ session timeout + 6 s = %.1f s", session + 6),
        seconds(killMax), killMax <= session + 6);
    row(sb, "SIGTERM: fail-over ≤ 3 s (every partition)", seconds(termMax) + " (median " + seconds(median(stopped))
        + ")", termMax <= 3);
    row(sb, "other partitions' longest gap ≤ 1 s around a SIGKILL", Failover.gap(killGap), killGap.ms() <= 1000);
    row(sb, "other partitions' longest gap ≤ 1 s around a SIGTERM", Failover.gap(termGap), termGap.ms() <= 1000);
    row(sb, "other partitions' longest gap ≤ 1 s while a node joins", Failover.gap(joinGap), joinGap.ms() <= 1000);

    faultSection(sb, "## 1. SIGKILL of one node", faults, Kind.SIGKILL);
    faultSection(sb, "## 2. SIGTERM of one node", faults, Kind.SIGTERM);
    sb.append("\n## 3. A node joining (the restart after each fault)\n\n| run | node | restarted at | READY after "
        + "| partitions moved to it | their longest pause | others' longest gap |\n|---|---|---|---:|---|---:|---:|\n");
    for (JoinRun j : joins) {
      sb.append(String.format(Locale.ROOT, "| %d (after %s) | node%d | %s | %.1f s | %s | %s | %s |%n", j.run(),
          j.after(), j.node(), Failover.clock(j.startedAt()), (j.readyAt() - j.startedAt()) / 1e3,
          partitions(j.moved()), Failover.gap(j.movedPause()), Failover.gap(j.others())));
    }
    sb.append(String.format(Locale.ROOT, "%nAcross the %d joins: others' longest gap %s; moved partitions' longest "
        + "pause %s.%n", joins.size(), Failover.gap(joinGap),
        Failover.gap(joins.stream().map(JoinRun::movedPause).reduce(Gap.NONE, Gap::max))));

    sb.append("\n## Journal writes per node\n\n");
    for (Chart c : charts) {
      long unattributed = Arrays.stream(c.counts()[c.counts().length - 1]).sum();
      sb.append(String.format(Locale.ROOT, "![%s](%s)%n%n0 s is the %s of node%d at %s (run %d); node%d was "
          + "restarted at %+.1f s and printed READY at %+.1f s.%s%n%n", c.fault().kind(), c.file(), c.fault().kind(),
          c.fault().node(), Failover.clock(c.fault().at()), c.fault().run(), c.join().node(),
          (c.join().startedAt() - c.fault().at()) / 1e3, (c.join().readyAt() - c.fault().at()) / 1e3,
          unattributed == 0 ? "" : String.format(Locale.ROOT, " %,d writes had no owner in the logs (not plotted).",
              unattributed)));
    }

    sb.append(String.format(Locale.ROOT, "## How it is measured%n%n"
        + "- **Fail-over** of a partition: from the signal (the time taken just before it was sent) to the "
        + "partition's first journal row written by another actor incarnation (`writer` column), i.e. the new "
        + "owner's first applied batch; the time of a row is its `write_timestamp`, set by pekko-persistence-jdbc "
        + "when it takes the write. It includes the group noticing the loss (the session timeout after a SIGKILL, "
        + "the consumer leaving after a SIGTERM), the rebalance, the actor's recovery and its "
        + "first batch. A SIGTERMed node's own last writes while it drains do not count.%n"
        + "- **Which node owned a partition** at the fault: the last `seeking to stored offsets` line for it in "
        + "the nodes' logs (only the logs name the node; the journal's `writer` is a random id per incarnation).%n"
        + "- **Others' longest gap**: over the partitions the stopped node did not own, the longest time without a "
        + "journal row from %d s before the signal to %d s after it, the window's edges included; \"others moved\" "
        + "lists those that another incarnation wrote in that window. For a join the window runs from %d s before "
        + "the JVM started to %d s after it printed READY (its consumer joins the group then), and the partitions "
        + "moved to it are those its log started in the window.%n"
        + "- Before each fault every node runs and every partition wrote within the last %d s. At %,d "
        + "payments/s a partition writes a row every few tens of milliseconds (batch.max-latency 20 ms, one write "
        + "in flight), so a gap well above 0.1 s is a stall.%n"
        + "- Medians are over every moved partition of every run (the mean of the middle two for an even count); "
        + "a partition that did not apply again within %d s counts as infinite.%n", Failover.BEFORE.toSeconds(),
        Failover.WINDOW.toSeconds(), Failover.BEFORE.toSeconds(), Failover.WINDOW.toSeconds(),
        Failover.STEADY.toSeconds(), Failover.RATE, Failover.FAILOVER_LIMIT.toSeconds()));
    return sb.toString();
  }

  private static void faultSection(StringBuilder sb, String title, List<FaultRun> faults, Kind kind) {
    sb.append("\n").append(title).append("\n\n| run | fault | partitions moved | fail-over median | fail-over max "
        + "| others' longest gap | others moved |\n|---|---|---|---:|---:|---:|---|\n");
    List<Double> medians = new ArrayList<>();
    for (FaultRun f : faults) {
      if (f.kind() == kind) {
        List<Double> times = f.failoverMs().values().stream().map(FailoverReport::secondsOf).toList();
        medians.add(median(times));
        sb.append(String.format(Locale.ROOT, "| %d | %s node%d at %s | %s | %s | %s | %s | %s |%n", f.run(), kind,
            f.node(), Failover.clock(f.at()), partitions(f.failoverMs().keySet()), seconds(median(times)),
            seconds(max(times)), Failover.gap(f.others()), partitions(f.othersMoved())));
      }
    }
    List<Double> all = failovers(faults, kind);
    sb.append(String.format(Locale.ROOT, "%nAcross the runs: %d partitions moved, fail-over median %s, max %s "
        + "(run medians %s to %s); others' longest gap %s.%n", all.size(), seconds(median(all)), seconds(max(all)),
        seconds(medians.stream().filter(m -> !m.isNaN()).mapToDouble(Double::doubleValue).min().orElse(Double.NaN)),
        seconds(medians.stream().filter(m -> !m.isNaN()).mapToDouble(Double::doubleValue).max().orElse(Double.NaN)),
        Failover.gap(worst(faults, kind))));
  }

  /** Per-node journal writes per second around one fault. */
  static String chart(Chart c, int nodes) {
    int seconds = c.counts()[0].length;
    List<String> labels = IntStream.range(0, seconds).map(i -> i - c.secondsBefore())
        .mapToObj(t -> t % 10 == 0 ? Integer.toString(t) : "").toList();
    String kind = c.fault().kind().toString();
    LineChart chart = new LineChart(String.format(Locale.ROOT, "Journal writes/s per node, %s of node%d (run %d)",
        kind, c.fault().node(), c.fault().run()), String.format(Locale.ROOT, "seconds after "
        + "the %s (restart at %+.0f s, READY at %+.0f s)", kind, (c.join().startedAt() - c.fault().at()) / 1e3,
        (c.join().readyAt() - c.fault().at()) / 1e3), "journal writes/s", labels);
    for (int n = 0; n < nodes; n++) {
      chart.series("node" + n, Arrays.stream(c.counts()[n]).mapToObj(v -> (double) v).toList());
    }
    return chart.svg();
  }

  /** Fail-over times in seconds of every partition moved by faults of this kind (infinite: never). */
  private static List<Double> failovers(List<FaultRun> faults, Kind kind) {
    return faults.stream().filter(f -> f.kind() == kind)
        .flatMap(f -> f.failoverMs().values().stream().map(FailoverReport::secondsOf)).toList();
  }

  private static Gap worst(List<FaultRun> faults, Kind kind) {
    return faults.stream().filter(f -> f.kind() == kind).map(FaultRun::others).reduce(Gap.NONE, Gap::max);
  }

  private static double secondsOf(Long ms) {
    return ms == null ? Double.POSITIVE_INFINITY : ms / 1e3;
  }

  /** The median (the mean of the middle two for an even count); NaN for none. */
  static double median(List<Double> values) {
    if (values.isEmpty()) {
      return Double.NaN;
    }
    List<Double> sorted = values.stream().sorted().toList();
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  private static double max(List<Double> values) {
    return values.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
  }

  private static String seconds(double s) {
    if (Double.isNaN(s)) {
      return "—";
    }
    return Double.isInfinite(s) ? "> " + Failover.FAILOVER_LIMIT.toSeconds() + " s"
        : String.format(Locale.ROOT, "%.2f s", s);
  }

  /** "4: 0, 3, 6, 9" (partition numbers of the topic), or "none". */
  private static String partitions(Iterable<Integer> partitions) {
    List<String> numbers = new ArrayList<>();
    partitions.forEach(p -> numbers.add(Integer.toString(p)));
    return numbers.isEmpty() ? "none" : numbers.size() + ": " + String.join(", ", numbers);
  }

  private static void row(StringBuilder sb, String target, String measured, boolean met) {
    sb.append("| ").append(target).append(" | ").append(measured).append(" | ").append(met ? "yes" : "**no**")
        .append(" |\n");
  }
}
