package io.fencepost.benchmarks;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

/**
 * Reads Fencepost's own end-to-end latency: the timer {@value #METER} that core records per applied
 * record once its batch's journal write is durable (now minus the record timestamp). A
 * {@link SimpleMeterRegistry} joins {@link Metrics#globalRegistry} before any pipeline starts; its
 * filters drop the {@code partition} tag of that timer, so all partitions of one consumer group
 * record into a single timer (percentiles over every record, not a max over partitions), with the
 * buckets of {@link Latency#buckets(String)}.
 */
final class FencepostLatency {

  static final String METER = "fencepost.effect.latency";

  private static SimpleMeterRegistry registry;

  private FencepostLatency() {
  }

  /** Adds the registry to the global one (once per JVM); call before a pipeline starts. */
  static synchronized void install() {
    if (registry != null) {
      return;
    }
    registry = new SimpleMeterRegistry();
    registry.config()
        .meterFilter(new MeterFilter() {
          @Override
          public Meter.Id map(Meter.Id id) {
            return id.getName().equals(METER) ? id.replaceTags(id.getTags().stream()
                .filter(t -> !t.getKey().equals("partition")).toList()) : id;
          }
        })
        .meterFilter(Latency.buckets(METER));
    Metrics.globalRegistry.add(registry);
  }

  /** The timer of consumer group {@code group}, or null before its first applied record. */
  static synchronized Timer timer(String group) {
    return registry == null ? null : registry.find(METER).tag("group", group).timer();
  }
}
