package io.fencepost.benchmarks;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;

/** Peak used heap of this JVM between {@link #resetPeak()} and {@link #peakMib()}. */
final class Heap {

  private Heap() {
  }

  /** Collects garbage and starts a new peak. */
  static void resetPeak() {
    System.gc();
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      pool.resetPeakUsage();
    }
  }

  /** The sum of the heap pools' peaks since the last reset, in MiB. */
  static long peakMib() {
    long peak = 0;
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP && pool.getPeakUsage() != null) {
        peak += pool.getPeakUsage().getUsed();
      }
    }
    return peak / (1024 * 1024);
  }
}
