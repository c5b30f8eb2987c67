package io.fencepost.benchmarks;

import java.time.Duration;
import java.util.function.Supplier;

import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.HistogramSnapshot;

/**
 * The steady-state latency of a paced run: the bucket counts of the peer's latency timer at the end
 * of the run minus those {@code warmup} after the peer became ready. The warm-up leaves out the
 * start-up transient (first fetches, fresh connections, code paths compiled for a trickle of
 * records), which otherwise dominates the p99 of a run of a few seconds.
 */
final class LatencyProbe {

  private final Duration warmup;
  private volatile Supplier<Timer> timer = () -> null;
  private volatile HistogramSnapshot afterWarmup;

  LatencyProbe(Duration warmup) {
    this.warmup = warmup;
  }

  /** A recorder for a peer that measures latency itself; its timer is the one read. */
  Latency.Recorder recorder() {
    Latency.Recorder recorder = new Latency.Recorder();
    timer = recorder::timer;
    return recorder;
  }

  /** Reads another timer (Fencepost's own); the supplier may give null until the first record. */
  void follow(Supplier<Timer> source) {
    timer = source;
  }

  /** The peer is ready: the warm-up starts now. */
  void ready() {
    Thread t = new Thread(() -> {
      try {
        Thread.sleep(warmup.toMillis());
        afterWarmup = snapshot();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "latency-warmup");
    t.setDaemon(true);
    t.start();
  }

  /** The latency of the records done after the warm-up. */
  Latency steady() {
    HistogramSnapshot end = snapshot();
    if (afterWarmup == null || end == null) {
      throw new IllegalStateException("no latency recorded after the " + warmup.toSeconds() + " s warm-up");
    }
    return Latency.between(afterWarmup, end);
  }

  private HistogramSnapshot snapshot() {
    Timer t = timer.get();
    return t == null ? null : t.takeSnapshot();
  }
}
