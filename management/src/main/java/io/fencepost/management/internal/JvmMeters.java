package io.fencepost.management.internal;

import java.util.List;

import io.fencepost.FencepostMeters;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Micrometer's own JVM and process binders (not hand-written gauges) on the actor system's
 * {@link FencepostMeters} registry, so that the Prometheus page a platform team scrapes has memory,
 * GC, threads, classes, CPU, uptime and open files next to Fencepost's meters.
 */
public final class JvmMeters {

  private JvmMeters() {
  }

  /** Binds the meters; the garbage-collection listener is removed when the actor system terminates. */
  public static void bind(ActorSystem<?> system) {
    MeterRegistry registry = FencepostMeters.get(system).registryForNewMeter();
    JvmGcMetrics gc = new JvmGcMetrics();
    List<MeterBinder> binders = List.of(new ClassLoaderMetrics(), new JvmMemoryMetrics(), gc, new JvmThreadMetrics(),
        new ProcessorMetrics(), new UptimeMetrics(), new FileDescriptorMetrics());
    binders.forEach(b -> b.bindTo(registry));
    system.getWhenTerminated().thenRun(gc::close);
  }
}
