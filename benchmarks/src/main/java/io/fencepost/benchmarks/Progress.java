package io.fencepost.benchmarks;

import java.util.concurrent.atomic.AtomicLong;

/**
 * When a run started and when its last effect was done; cheap on the hot path. A run starts when
 * its consumer has all partitions assigned or when its first record is applied, whichever comes
 * first: consumer start-up (group join, actor system) is left out, fetching is not.
 */
final class Progress {

  private final AtomicLong start = new AtomicLong();
  private volatile long end;

  /** All partitions are assigned, or a record is being applied (only the first call counts). */
  void started() {
    if (start.get() == 0) {
      start.compareAndSet(0, System.nanoTime());
    }
  }

  /** The last effect is done. */
  void finished() {
    end = System.nanoTime();
  }

  /** Seconds from the start to the last effect. */
  double seconds() {
    if (start.get() == 0 || end == 0) {
      throw new IllegalStateException("run not started or not finished");
    }
    return (end - start.get()) / 1e9;
  }
}
