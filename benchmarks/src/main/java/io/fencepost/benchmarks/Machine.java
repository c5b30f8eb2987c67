package io.fencepost.benchmarks;

import java.lang.management.ManagementFactory;
import java.util.Locale;

import com.sun.management.OperatingSystemMXBean;

/**
 * Where the numbers were taken.
 *
 * @param cores available processors
 * @param memoryGib physical memory
 * @param java JVM name and version
 * @param maxHeapMib the JVM's maximum heap
 * @param postgres the PostgreSQL server's version
 */
record Machine(int cores, long memoryGib, String java, long maxHeapMib, String postgres) {

  static Machine describe(Infrastructure infra) throws Exception {
    long memory = ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getTotalMemorySize();
    return new Machine(Runtime.getRuntime().availableProcessors(), Math.round(memory / (double) (1L << 30)),
        System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"),
        Runtime.getRuntime().maxMemory() >> 20, infra.postgresVersion());
  }

  String summary() {
    return String.format(Locale.ROOT, "%d cores, %d GiB RAM, %s (max heap %,d MiB), %s; Kafka broker "
        + "in-process (KRaft, single node), everything on loopback", cores, memoryGib, java, maxHeapMib,
        postgres);
  }
}
