package io.fencepost.benchmarks;

import java.util.List;
import java.util.Locale;
import java.util.Optional;

/** Renders results as Markdown tables and SVG charts. */
final class Report {

  private Report() {
  }

  /** The side-by-side table, with the conditions of the run above it. */
  static String sideBySide(Plan plan, Machine machine, List<PeerResult> results, double offered) {
    double raw = find(results, "raw").throughput().rate();
    double inbox = find(results, "naive-inbox-1").throughput().rate();
    StringBuilder sb = new StringBuilder();
    sb.append(String.format(Locale.ROOT, "Side by side, one `%s` run: %,d records of %d bytes (business keys, %,d "
        + "merchants as record keys) on %d partitions; %s.%n%n", plan.name(), plan.records(), plan.recordBytes(),
        Workload.MERCHANTS, plan.partitions(), machine.summary()));
    sb.append("| peer | promise | records | records/s (median) | min – max | × raw | × inbox/rec | p50 ms | p99 ms "
        + "| live heap MiB | DB rows / 100 records | DB bytes / record | WAL bytes / record | dup | loss |\n");
    sb.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (PeerResult r : results) {
      Outcome t = r.throughput().median();
      DbUsage db = t.database();
      sb.append(String.format(Locale.ROOT, "| %s | %s | %,d | %,.0f | %s | %s | %.1f | %s | %s | %d | %s | %s | %s "
          + "| %d | %d |%n", r.peer().description(), r.peer().promise().label(), t.records(), t.rate(),
          range(r.throughput()), ratio(t.rate() / raw), t.rate() / inbox,
          r.latency() == null ? "—" : ms(r.latency().latency().p50Ms()),
          r.latency() == null ? "—" : ms(r.latency().latency().p99Ms()), t.peakHeapMib(),
          db == null ? "—" : perRecord(100 * db.rowsWritten(), t.records(), "%.2f"),
          db == null ? "—" : perRecord(db.relationBytes(), t.records(), "%.0f"),
          db == null ? "—" : perRecord(db.walBytes(), t.records(), "%.0f"), r.duplicates(), r.losses()));
    }
    sb.append(String.format(Locale.ROOT, "%nrecords/s: median of %d runs on the pre-filled topic (round-robin over the "
        + "peers, after a warm-up), each from all partitions assigned (or the first effect, if earlier) to the last "
        + "effect done; the other throughput columns are the median run's. Latency: record timestamp (producer send, "
        + "linger.ms %d) to effect done, every peer on a fresh topic fed at the same offered load of %,.0f records/s "
        + "(half of Fencepost exactly-once's median rate) for %d s; only records done in the last %d s count (the "
        + "first %d s are the peer's warm-up); percentiles are bucket upper bounds (1 ms wide to 50 ms, 2 ms to 100 ms, "
        + "5 ms to 300 ms, 10 ms to 1 s):%n%n", plan.repetitions(), PacedProducer.LINGER_MS, offered,
        plan.latencyRun().plus(plan.latencyRun().dividedBy(4)).toSeconds(), plan.latencyRun().toSeconds(),
        plan.latencyRun().dividedBy(4).toSeconds()));
    for (PeerResult r : results) {
      sb.append("- ").append(r.peer().name()).append(": ").append(r.latencyNote());
      if (r.latency() != null) {
        Latency l = r.latency().latency();
        sb.append(String.format(Locale.ROOT, "; %,d records measured, max %s ms", l.count(), ms(l.maxMs())));
      }
      sb.append('\n');
    }
    sb.append('\n');
    sb.append(String.format(Locale.ROOT, "Live heap: the most heap in use right after a garbage collection during the "
        + "peer's runs, a full collection at the end included, for the whole JVM with the in-process broker (Kafka "
        + "Streams' RocksDB state is off-heap). Database columns: rows inserted, updated or deleted "
        + "(pg_stat_user_tables), growth of tables with indexes (pg_total_relation_size) and WAL written "
        + "(pg_current_wal_lsn), per record applied.%n%n"));
    sb.append("Duplicates and losses: summed over all runs of the peer; counted by ");
    results.stream().map(r -> r.peer().name() + " — " + r.throughput().median().checkedBy())
        .reduce((a, b) -> a + "; " + b).ifPresent(sb::append);
    sb.append(".\n");
    return sb.toString();
  }

  /** Fencepost exactly-once against the targets. */
  static String targets(List<PeerResult> results, Optional<Sweep> partitions) {
    PeerResult eoResult = find(results, "fencepost-eo");
    Outcome eo = eoResult.throughput().median();
    double raw = find(results, "raw").throughput().rate();
    double inbox = find(results, "naive-inbox-1").throughput().rate();
    double streams = find(results, "kstreams-eos").throughput().rate();
    StringBuilder sb = new StringBuilder("| target | measured | met |\n|---|---:|---|\n");
    row(sb, "Fencepost EO ≥ 0.25 × raw", String.format(Locale.ROOT, "%.2f ×", eo.rate() / raw), eo.rate() / raw >= 0.25);
    row(sb, "Fencepost EO ≥ 20 × naive inbox (1 record per transaction)",
        String.format(Locale.ROOT, "%.1f ×", eo.rate() / inbox), eo.rate() / inbox >= 20);
    row(sb, "Fencepost EO ≥ 2 × Kafka Streams exactly_once_v2", String.format(Locale.ROOT, "%.2f ×", eo.rate() / streams),
        eo.rate() / streams >= 2);
    partitions.flatMap(s -> s.points().stream().filter(p -> p.label().equals("1")).findFirst()).ifPresent(p ->
        row(sb, "Fencepost EO on 1 partition ≥ 50,000 records/s",
            String.format(Locale.ROOT, "%,.0f records/s", p.fencepost().rate()), p.fencepost().rate() >= 50_000));
    double journalPer100 = 100.0 * eo.database().journalRows() / eo.records();
    row(sb, "≤ 1 journal row per 100 records", String.format(Locale.ROOT, "%.2f rows per 100", journalPer100),
        journalPer100 <= 1);
    if (eoResult.latency() != null) {
      double p99 = eoResult.latency().latency().p99Ms();
      row(sb, "p99 ≤ 25 ms at half the maximum rate", ms(p99) + " ms", p99 <= 25);
    }
    return sb.toString();
  }

  /** A sweep as a table. */
  static String sweep(Sweep s) {
    StringBuilder sb = new StringBuilder("| " + s.parameter() + " | records | Fencepost EO records/s (median) "
        + "| min – max | EO MiB/s | raw records/s (median) | min – max | EO / raw | journal rows / 100 records "
        + "| WAL bytes / record | dup | loss |\n");
    sb.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (Sweep.Point p : s.points()) {
      Repeated eo = p.fencepost();
      Repeated raw = p.raw();
      DbUsage db = eo.median().database();
      long records = p.workload().records();
      sb.append(String.format(Locale.ROOT, "| %s | %,d | %,.0f | %s | %.1f | %s | %s | %s | %.2f | %.0f | %d | %d |%n",
          p.label(), records, eo.rate(), range(eo), eo.rate() * p.workload().recordBytes() / (1 << 20),
          raw == null ? "—" : String.format(Locale.ROOT, "%,.0f", raw.rate()), raw == null ? "—" : range(raw),
          raw == null ? "—" : String.format(Locale.ROOT, "%.2f", eo.rate() / raw.rate()),
          100.0 * db.journalRows() / records, db.walBytes() / (double) records, eo.duplicates(), eo.losses()));
    }
    sb.append(String.format(Locale.ROOT, "%nMedian of the runs at each point (each with a fresh consumer group and "
        + "database); duplicates and losses over all of them, from the actors' applied-record counters.%n"));
    return sb.toString();
  }

  /** A sweep as a line chart of records/s. */
  static String sweepChart(Sweep s) {
    List<String> labels = s.points().stream().map(Sweep.Point::label).toList();
    LineChart chart = new LineChart(s.title() + ": records/s (median)", s.parameter(), "records/s", labels)
        .series("Fencepost exactly-once", s.points().stream().map(p -> p.fencepost().rate()).toList());
    if (s.points().stream().anyMatch(p -> p.raw() != null)) {
      chart.series("raw KafkaConsumer", s.points().stream().map(p -> p.raw() == null ? null : p.raw().rate()).toList());
    }
    return chart.svg();
  }

  /** The side-by-side throughput as a bar chart. */
  static String sideBySideChart(Plan plan, List<PeerResult> results) {
    BarChart chart = new BarChart(String.format(Locale.ROOT, "records/s (median of %d runs), %,d records, %d "
        + "partitions", plan.repetitions(), plan.records(), plan.partitions()), "records/s");
    results.forEach(r -> chart.bar(r.peer().name(), r.throughput().rate(), r.peer() instanceof FencepostPeer));
    return chart.svg();
  }

  /** One line per peer: whether it kept its promise and was clean. */
  static String verdicts(List<PeerResult> results) {
    StringBuilder sb = new StringBuilder();
    for (PeerResult r : results) {
      sb.append(String.format(Locale.ROOT, "%-15s %-14s %s: dup %d, loss %d%n", r.peer().name(),
          r.peer().promise().label(), !r.keptPromise() ? "BROKE ITS PROMISE" : r.clean() ? "ok" : "kept its promise",
          r.duplicates(), r.losses()));
    }
    return sb.toString();
  }

  private static void row(StringBuilder sb, String target, String measured, boolean met) {
    sb.append("| ").append(target).append(" | ").append(measured).append(" | ").append(met ? "yes" : "**no**")
        .append(" |\n");
  }

  private static PeerResult find(List<PeerResult> results, String name) {
    return results.stream().filter(r -> r.peer().name().equals(name)).findFirst()
        .orElseThrow(() -> new IllegalStateException("no peer " + name));
  }

  /** Two decimals, three below 0.1 (so the naive inbox's share of raw is not 0.00). */
  private static String ratio(double v) {
    return String.format(Locale.ROOT, v < 0.1 ? "%.3f" : "%.2f", v);
  }

  private static String range(Repeated r) {
    return String.format(Locale.ROOT, "%,.0f – %,.0f", r.minRate(), r.maxRate());
  }

  private static String perRecord(long total, long records, String format) {
    return String.format(Locale.ROOT, format, total / (double) records);
  }

  private static String ms(double v) {
    return Double.isNaN(v) ? "—" : String.format(Locale.ROOT, v < 10 ? "%.1f" : "%.0f", v);
  }
}
