package io.fencepost;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/**
 * Components of one actor system that can make its node not ready besides its pipelines (a read
 * model's projection that keeps failing, for one): each registers a reason supplier, and
 * fencepost-management's {@code GET /ready} fails with every reason given while one is.
 *
 * <pre>{@code
 * AutoCloseable registration = Readiness.get(system).register("projection [balances]", () -> reason());
 * }</pre>
 */
public final class Readiness implements Extension {

  private static final ExtensionId<Readiness> ID = new ExtensionId<>() {
    @Override
    public Readiness createExtension(ActorSystem<?> system) {
      return new Readiness();
    }
  };

  private final Map<Object, Supplier<Optional<String>>> components = new ConcurrentHashMap<>();

  private Readiness() {
  }

  /** This actor system's readiness registry. */
  public static Readiness get(ActorSystem<?> system) {
    return ID.apply(system);
  }

  /**
   * Registers a component whose {@code notReady} gives the reason it is not ready now, or empty while
   * it is; closing the returned registration removes it.
   */
  public AutoCloseable register(String component, Supplier<Optional<String>> notReady) {
    Objects.requireNonNull(component, "component");
    Objects.requireNonNull(notReady, "notReady");
    Object key = new Object();
    components.put(key, notReady);
    return () -> components.remove(key);
  }

  /** The reasons of the components not ready now (empty: every registered component is ready). */
  public List<String> notReady() {
    return components.values().stream().map(Supplier::get).flatMap(Optional::stream).toList();
  }
}
