package io.fencepost.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

import com.sun.management.OperatingSystemMXBean;

/** Process CPU time (user and system): this JVM's, and another process's from /proc (Linux). */
final class ProcessCpu {

  private static final OperatingSystemMXBean OWN = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
  /** /proc counts in clock ticks: 100 per second on Linux (USER_HZ). */
  private static final long NANOS_PER_TICK = 10_000_000L;

  private ProcessCpu() {
  }

  /** This JVM's CPU nanoseconds so far. */
  static long own() {
    return OWN.getProcessCpuTime();
  }

  /** Process {@code pid}'s CPU nanoseconds so far (10 ms resolution). */
  static long of(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
      // after "pid (command) ": state is field 3, utime field 14, stime field 15
      String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) * NANOS_PER_TICK;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the CPU time of process " + pid, e);
    }
  }

  /** This JVM's and process {@code otherPid}'s CPU nanoseconds over the next {@code seconds} seconds. */
  static long[] over(long otherPid, int seconds) throws InterruptedException {
    long own0 = own();
    long other0 = of(otherPid);
    Thread.sleep(seconds * 1_000L);
    return new long[] {own() - own0, of(otherPid) - other0};
  }

  /** Microseconds per operation, NaN for none. */
  static double microsEach(long nanos, long operations) {
    return operations == 0 ? Double.NaN : nanos / 1e3 / operations;
  }
}
