package io.fencepost.internal;

import java.util.function.LongSupplier;

/**
 * The clock a partition's key window ages by, and that each journal entry records. It continues
 * from the clock of the partition's last write and advances by the time its current owner has been
 * running, measured on that owner's monotonic clock. No node's wall clock moves it: a node whose
 * wall clock runs hours ahead cannot age keys that are still inside the window for everybody else.
 *
 * <p>Time during which no incarnation owned the partition is not counted, so a key is remembered for
 * at least {@code max-age} of owned time (longer in wall time; {@code max-keys} still bounds memory).
 * Only a partition's very first write takes the writing node's wall clock as its starting point.
 */
public final class WindowClock {

  private final LongSupplier wallMillis;
  private final LongSupplier monotonicNanos;
  private long baseMillis = -1;
  private long baseNanos;

  public WindowClock(LongSupplier wallMillis, LongSupplier monotonicNanos) {
    this.wallMillis = wallMillis;
    this.monotonicNanos = monotonicNanos;
  }

  /** The system's clocks. */
  public static WindowClock system() {
    return new WindowClock(System::currentTimeMillis, System::nanoTime);
  }

  /**
   * Starts counting from a recovered state's clock ({@code lastWriteMillis}, 0 before the first
   * write); called on every recovery, since another incarnation may have written meanwhile.
   */
  public void recovered(long storedMillis) {
    baseMillis = storedMillis > 0 ? storedMillis : wallMillis.getAsLong();
    baseNanos = monotonicNanos.getAsLong();
  }

  /** The clock for a write now: never below the stored clock, so it never runs backwards. */
  public long now(long storedMillis) {
    if (baseMillis < 0) {
      recovered(storedMillis);
    }
    long elapsedMillis = Math.max(0, (monotonicNanos.getAsLong() - baseNanos) / 1_000_000);
    return Math.max(storedMillis, baseMillis + elapsedMillis);
  }
}
