package io.fencepost;

import java.util.Objects;

import io.fencepost.annotation.InternalApi;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/**
 * The Micrometer registry Fencepost's meters go to on one actor system: Micrometer's
 * {@link Metrics#globalRegistry} unless {@link #use} named another before the first partition
 * actor or pipeline started there.
 *
 * <pre>{@code
 * PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
 * FencepostMeters.get(system).use(prometheus);
 * KafkaPipeline.create(system, LedgerActor::new, deserializer, settings).start();
 * }</pre>
 *
 * <p>The meters and their tags are listed in docs/operations.md, "Meters".
 */
public final class FencepostMeters implements Extension {

  private static final ExtensionId<FencepostMeters> ID = new ExtensionId<>() {
    @Override
    public FencepostMeters createExtension(ActorSystem<?> system) {
      return new FencepostMeters();
    }
  };

  private volatile MeterRegistry registry = Metrics.globalRegistry;
  // Set once this system registered a meter: use() then refuses another registry.
  private volatile boolean registered;

  private FencepostMeters() {
  }

  /** This actor system's meters. */
  public static FencepostMeters get(ActorSystem<?> system) {
    return ID.apply(system);
  }

  /**
   * Registers this actor system's meters in {@code registry} instead of the global one.
   *
   * @throws IllegalStateException when Fencepost meters were already registered in another registry
   *     (a partition actor or pipeline started first): call it right after creating the actor system
   */
  public synchronized FencepostMeters use(MeterRegistry registry) {
    Objects.requireNonNull(registry, "registry");
    // Only this system's meters count: other actor systems of the JVM may share the global registry.
    if (registry != this.registry && registered) {
      throw new IllegalStateException("FencepostMeters.use(" + registry.getClass().getSimpleName() + ") came after "
          + "meters were registered in " + this.registry.getClass().getSimpleName() + ": call it right after "
          + "creating the actor system, before any partition actor or pipeline starts");
    }
    this.registry = registry;
    return this;
  }

  /** The registry Fencepost's meters go to (to read them). */
  public MeterRegistry registry() {
    return registry;
  }

  /**
   * INTERNAL API. The registry for a meter about to be registered. Fencepost's own meter code calls it; from then
   * on {@link #use} refuses another registry. Applications read the meters with {@link #registry()}.
   */
  @InternalApi
  public synchronized MeterRegistry registryForNewMeter() {
    registered = true;
    return registry;
  }
}
