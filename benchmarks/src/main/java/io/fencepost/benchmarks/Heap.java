package io.fencepost.benchmarks;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import javax.management.NotificationEmitter;
import javax.management.openmbean.CompositeData;

import com.sun.management.GarbageCollectionNotificationInfo;

/**
 * The live heap of this JVM between {@link #resetPeak()} and {@link #peakMib()}: the most heap in
 * use right after a garbage collection (what the collector could not free), over every collection
 * in between and a full one at the end. Unlike the peak of used heap, it does not depend on when
 * the collector happened to run.
 */
final class Heap {

  private static final Set<String> HEAP_POOLS = ManagementFactory.getMemoryPoolMXBeans().stream()
      .filter(p -> p.getType() == MemoryType.HEAP).map(MemoryPoolMXBean::getName).collect(Collectors.toSet());
  private static volatile long since;
  private static volatile long peakLive;

  static {
    for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      if (gc instanceof NotificationEmitter emitter) {
        emitter.addNotificationListener((notification, handback) -> {
          if (!GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(notification.getType())) {
            return;
          }
          GarbageCollectionNotificationInfo info =
              GarbageCollectionNotificationInfo.from((CompositeData) notification.getUserData());
          if (info.getGcInfo().getStartTime() >= since) {
            record(afterGc(info.getGcInfo().getMemoryUsageAfterGc()));
          }
        }, null, null);
      }
    }
  }

  private Heap() {
  }

  private static long afterGc(Map<String, MemoryUsage> pools) {
    long used = 0;
    for (Map.Entry<String, MemoryUsage> pool : pools.entrySet()) {
      if (HEAP_POOLS.contains(pool.getKey())) {
        used += pool.getValue().getUsed();
      }
    }
    return used;
  }

  private static synchronized void record(long live) {
    peakLive = Math.max(peakLive, live);
  }

  /** Collects garbage and starts a new peak (collections that started before now do not count). */
  static synchronized void resetPeak() {
    System.gc();
    since = ManagementFactory.getRuntimeMXBean().getUptime();
    peakLive = 0;
  }

  /** The most heap live after a collection since the last reset, a full collection now included, in MiB. */
  static long peakMib() {
    System.gc();
    long now = 0;
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP) {
        now += pool.getUsage().getUsed();
      }
    }
    record(now);
    return peakLive / (1024 * 1024);
  }
}
