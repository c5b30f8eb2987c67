package io.fencepost.management;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletionStage;

import com.typesafe.config.Config;
import io.fencepost.errors.SettingsException;
import io.fencepost.management.internal.JvmMeters;
import io.fencepost.management.internal.QueryRoutes;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.management.javadsl.PekkoManagement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operations endpoints of a node on one HTTP port ({@code fencepost.management.hostname} and
 * {@code port}, loopback by default): {@code GET /ready} and {@code /alive} (Pekko Management health
 * checks, Fencepost's pipelines among them), {@code GET /metrics} (Prometheus), and every other route
 * configured under {@code pekko.management.http.routes}.
 *
 * <pre>{@code
 * PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
 * FencepostMeters.get(system).use(prometheus);
 * FencepostManagement.start(system).toCompletableFuture().join();
 * KafkaPipeline.create(system, LedgerActor::new, deserializer, settings).start();
 * }</pre>
 *
 * <p>It also binds Micrometer's JVM and process meters to the same registry
 * ({@code fencepost.management.jvm-metrics}). The endpoints unbind when the actor system shuts
 * down. See docs/operations.md, "Health endpoints".
 */
public final class FencepostManagement {

  private static final Logger log = LoggerFactory.getLogger(FencepostManagement.class);

  private FencepostManagement() {
  }

  /** Binds the endpoints; completes with the bound address, or fails when the port cannot be bound. */
  public static CompletionStage<InetSocketAddress> start(ActorSystem<?> system) {
    Config config = system.settings().config().getConfig("fencepost.management");
    String host = config.getString("hostname");
    int port = config.getInt("port");
    if (port < 0 || port > 65535) {
      throw new SettingsException("fencepost.management.port", port, "must be a port number (0 for any free one)");
    }
    String metrics = config.getString("metrics-path");
    QueryRoutes.check(system);   // a misconfigured query route: one line naming its key, before anything binds
    if (config.getBoolean("jvm-metrics")) {
      JvmMeters.bind(system);
    }
    return Http.get(system).newServerAt(host, port)
        .bind(PekkoManagement.get(system.classicSystem()).getRoutes())
        .thenApply(binding -> {
          binding.addToCoordinatedShutdown(Duration.ofSeconds(5), system);
          InetSocketAddress bound = binding.localAddress();
          log.info("management endpoints at http://{}:{}/ (ready, alive, {})", host, bound.getPort(), metrics);
          if (!bound.getAddress().isLoopbackAddress()) {
            log.warn("management endpoints are reachable beyond this host at {} (fencepost.management.hostname = {}): "
                + "anyone who reaches the port reads the meters, health and configured query routes; keep it to the "
                + "orchestrator's network, see "
                + "docs/security.md", bound, host);
          }
          return bound;
        })
        .exceptionally(e -> {
          throw new SettingsException("fencepost.management.port", port, "cannot be bound on [" + host + "]: "
              + (e.getCause() != null ? e.getCause() : e) + "; pick a free port or another hostname");
        });
  }
}
