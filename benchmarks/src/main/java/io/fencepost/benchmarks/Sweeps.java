package io.fencepost.benchmarks;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import io.fencepost.DeliveryMode;

/**
 * The parameter sweeps of Fencepost exactly-once: partitions (1, 4, 16, 64, with the raw consumer
 * as reference), the pipeline's {@code batch.max-records} (50 .. 5,000 at 16 partitions) and the
 * record size (150, 1,000, 4,000 bytes, with raw). Each point gets a fresh topic; each of its runs
 * a fresh consumer group and database.
 */
final class Sweeps {

  /** Largest topic a record-size point writes: bounds the 4,000-byte point's record count. */
  private static final long MAX_TOPIC_BYTES = 256L << 20;

  private final Infrastructure infra;
  private final Plan plan;
  private final PrintStream progress;

  Sweeps(Infrastructure infra, Plan plan, PrintStream progress) {
    this.infra = infra;
    this.plan = plan;
    this.progress = progress;
  }

  List<Sweep> run() throws Exception {
    return List.of(partitions(), batchSizes(), recordSizes());
  }

  private Sweep partitions() throws Exception {
    List<Sweep.Point> points = new ArrayList<>();
    for (int partitions : new int[] {1, 4, 16, 64}) {
      points.add(point(String.valueOf(partitions), new Workload(plan.sweepRecords(), plan.recordBytes()), partitions,
          Comparison.BATCH_RECORDS, true));
    }
    return new Sweep("Partitions", "sweep-partitions", "partitions", points);
  }

  private Sweep batchSizes() throws Exception {
    List<Sweep.Point> points = new ArrayList<>();
    for (int batch : new int[] {50, 200, 1000, 5000}) {
      points.add(point(String.format(Locale.ROOT, "%,d", batch), new Workload(plan.sweepRecords(), plan.recordBytes()),
          plan.partitions(), batch, false));
    }
    return new Sweep("Batch size (batch.max-records)", "sweep-batch-size", "batch.max-records", points);
  }

  private Sweep recordSizes() throws Exception {
    List<Sweep.Point> points = new ArrayList<>();
    for (int bytes : new int[] {150, 1000, 4000}) {
      int records = (int) Math.min(plan.sweepRecords(), MAX_TOPIC_BYTES / bytes);
      points.add(point(String.format(Locale.ROOT, "%,d B", bytes), new Workload(records, bytes), plan.partitions(),
          Comparison.BATCH_RECORDS, true));
    }
    return new Sweep("Record size", "sweep-record-size", "record value size", points);
  }

  private Sweep.Point point(String label, Workload workload, int partitions, int batch, boolean withRaw)
      throws Exception {
    String topic = infra.newTopic("bench-sweep", partitions);
    workload.produce(infra.bootstrapServers(), topic);
    Run run = Run.prefilled(infra, topic, partitions, workload);
    List<Outcome> eo = new ArrayList<>();
    List<Outcome> raw = new ArrayList<>();
    for (int round = 0; round < plan.repetitions(); round++) {
      if (withRaw) {
        infra.quiesce();
        raw.add(new RawConsumerPeer().run(run));
      }
      infra.quiesce();
      eo.add(new FencepostPeer(DeliveryMode.EXACTLY_ONCE, batch, false).run(run));
    }
    infra.deleteTopics(topic);
    Sweep.Point point = new Sweep.Point(label, workload, new Repeated(eo), withRaw ? new Repeated(raw) : null);
    progress.printf(Locale.ROOT, "sweep      %d partitions, batch %,d, %,d B: fencepost-eo %s%s, dup %d, loss %d%n",
        partitions, batch, workload.recordBytes(), rates(point.fencepost()),
        withRaw ? ", raw " + rates(point.raw()) : "", point.fencepost().duplicates(), point.fencepost().losses());
    return point;
  }

  private static String rates(Repeated r) {
    return r.runs().stream().map(o -> String.format(Locale.ROOT, "%,.0f", o.rate()))
        .reduce((a, b) -> a + " / " + b).orElse("") + " records/s";
  }
}
