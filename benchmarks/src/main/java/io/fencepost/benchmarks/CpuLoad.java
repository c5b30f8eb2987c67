package io.fencepost.benchmarks;

import java.lang.management.ManagementFactory;

import com.sun.management.OperatingSystemMXBean;

/** The whole machine's mean CPU load (all processes, share of all cores) while it runs, sampled twice a second. */
final class CpuLoad implements AutoCloseable {

  private final OperatingSystemMXBean os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
  private final Thread sampler;
  private double sum;
  private int samples;

  private CpuLoad() {
    sampler = new Thread(this::sample, "cpu-load");
    sampler.setDaemon(true);
  }

  /** Starts sampling. */
  static CpuLoad start() {
    CpuLoad load = new CpuLoad();
    load.sampler.start();
    return load;
  }

  private void sample() {
    try {
      while (!Thread.currentThread().isInterrupted()) {
        Thread.sleep(500);
        double v = os.getCpuLoad();
        if (v >= 0) {
          synchronized (this) {
            sum += v;
            samples++;
          }
        }
      }
    } catch (InterruptedException e) {
      // stopped
    }
  }

  /** The mean load so far, 0 to 1 (NaN before the first sample). */
  synchronized double mean() {
    return samples == 0 ? Double.NaN : sum / samples;
  }

  @Override
  public void close() {
    sampler.interrupt();
  }
}
