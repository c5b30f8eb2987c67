package io.fencepost.management.internal;

import java.util.Optional;

import io.fencepost.FencepostMeters;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.Directives;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.management.javadsl.ManagementRouteProvider;
import org.apache.pekko.management.javadsl.ManagementRouteProviderSettings;

/**
 * Pekko Management route: {@code GET /metrics} (see {@code fencepost.management.metrics-path}) is the
 * Prometheus page of the actor system's {@link FencepostMeters} registry, when it is a
 * {@link PrometheusMeterRegistry} or a composite holding one; 404 naming the fix otherwise.
 */
public final class MetricsRoutes implements ManagementRouteProvider {

  private final ActorSystem<?> system;
  private final String path;

  public MetricsRoutes(ExtendedActorSystem system) {
    this.system = Adapter.toTyped(system);
    this.path = system.settings().config().getString("fencepost.management.metrics-path");
  }

  @Override
  public Route routes(ManagementRouteProviderSettings settings) {
    return Directives.path(PathMatchers.separateOnSlashes(path), () -> Directives.get(() -> {
      Optional<PrometheusMeterRegistry> prometheus = prometheus(FencepostMeters.get(system).registry());
      if (prometheus.isEmpty()) {
        return Directives.complete(StatusCodes.NOT_FOUND, "no Prometheus registry holds Fencepost's meters: call "
            + "FencepostMeters.get(system).use(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT)) before any "
            + "pipeline starts, or add one to Metrics.globalRegistry\n");
      }
      return Directives.complete(HttpResponse.create()
          .withEntity(HttpEntities.create(ContentTypes.TEXT_PLAIN_UTF8, prometheus.get().scrape())));
    }));
  }

  static Optional<PrometheusMeterRegistry> prometheus(MeterRegistry registry) {
    if (registry instanceof PrometheusMeterRegistry p) {
      return Optional.of(p);
    }
    if (registry instanceof CompositeMeterRegistry composite) {
      for (MeterRegistry child : composite.getRegistries()) {
        Optional<PrometheusMeterRegistry> found = prometheus(child);
        if (found.isPresent()) {
          return found;
        }
      }
    }
    return Optional.empty();
  }
}
