package io.fencepost.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.CountAtBucket;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.micrometer.core.instrument.distribution.HistogramSnapshot;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

/**
 * End-to-end latency percentiles: record timestamp (producer send) to the moment its effect is
 * done, from the bucket counts of a Micrometer {@link Timer} (fixed buckets: 1 ms wide up to 50 ms,
 * then 2, 5, 10, 50 and 100 ms wide up to 10 s). Fencepost's {@code fencepost.effect.latency} gets
 * the same buckets ({@link FencepostLatency}); {@link LatencyProbe} subtracts the counts at the end
 * of a warm-up from the final ones. A percentile is the upper bound of the bucket it falls in.
 *
 * @param count records measured
 * @param p50Ms median, milliseconds
 * @param p99Ms 99th percentile, milliseconds
 * @param p999Ms 99.9th percentile, milliseconds
 * @param maxMs upper bound of the highest bucket with a record, milliseconds
 */
record Latency(long count, double p50Ms, double p99Ms, double p999Ms, double maxMs) {

  private static final double[] BUCKETS_NANOS = buckets();

  private static double[] buckets() {
    List<Double> ms = new ArrayList<>();
    int[][] ranges = {{1, 50, 1}, {52, 100, 2}, {105, 300, 5}, {310, 1000, 10}, {1050, 3000, 50}, {3100, 10000, 100}};
    for (int[] r : ranges) {
      for (int v = r[0]; v <= r[1]; v += r[2]) {
        ms.add((double) v);
      }
    }
    return ms.stream().mapToDouble(v -> v * 1e6).toArray();
  }

  /** Gives the timers named {@code meter} the benchmarks' buckets, without decay within a run. */
  static MeterFilter buckets(String meter) {
    DistributionStatisticConfig distribution = DistributionStatisticConfig.builder()
        .serviceLevelObjectives(BUCKETS_NANOS)
        .expiry(Duration.ofHours(1))
        .bufferLength(1)
        .build();
    return new MeterFilter() {
      @Override
      public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
        return id.getName().equals(meter) ? distribution.merge(config) : config;
      }
    };
  }

  /** The latency of the records counted in {@code after} but not yet in {@code before} (null: none). */
  static Latency between(HistogramSnapshot before, HistogramSnapshot after) {
    CountAtBucket[] end = after.histogramCounts();
    double[] counts = new double[end.length];
    for (int i = 0; i < end.length; i++) {
      counts[i] = end[i].count() - (before == null ? 0 : before.histogramCounts()[i].count());
    }
    long total = after.count() - (before == null ? 0 : before.count());
    double max = Double.NaN;
    for (int i = end.length - 1; i >= 0 && Double.isNaN(max); i--) {
      double below = i == 0 ? 0 : counts[i - 1];
      if (counts[i] > below) {
        max = end[i].bucket(TimeUnit.MILLISECONDS);
      }
    }
    return new Latency(total, percentile(end, counts, 0.5), percentile(end, counts, 0.99),
        percentile(end, counts, 0.999), max);
  }

  /** The upper bound of the bucket holding the {@code q} quantile (cumulative counts); NaN if beyond the last. */
  private static double percentile(CountAtBucket[] buckets, double[] cumulative, double q) {
    double total = cumulative.length == 0 ? 0 : cumulative[cumulative.length - 1];
    for (int i = 0; i < buckets.length; i++) {
      if (total > 0 && cumulative[i] >= q * total) {
        return buckets[i].bucket(TimeUnit.MILLISECONDS);
      }
    }
    return Double.NaN;
  }

  /** Records latencies measured by the benchmark itself (the peers other than Fencepost). */
  static final class Recorder {
    private static final String METER = "bench.effect.latency";

    private final Timer timer;

    Recorder() {
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      registry.config().meterFilter(buckets(METER));
      timer = registry.timer(METER);
    }

    /** The effect of a record with this timestamp is done now. */
    void done(long recordTimestampMillis) {
      at(System.currentTimeMillis(), recordTimestampMillis);
    }

    /** The effect of a record with this timestamp was done at {@code doneMillis}. */
    void at(long doneMillis, long recordTimestampMillis) {
      timer.record(Math.max(0, doneMillis - recordTimestampMillis), TimeUnit.MILLISECONDS);
    }

    Timer timer() {
      return timer;
    }
  }
}
