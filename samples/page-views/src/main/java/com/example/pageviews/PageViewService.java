package com.example.pageviews;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.ClusterMembership;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PipelineSettings;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The service: one node of page-views. The journal database comes from the environment
 * ({@code JDBC_URL}, {@code JDBC_USER}, {@code JDBC_PASSWORD}; never from the command line, where
 * {@code ps} would show the password), everything else from {@code application.conf}. Exits 0 after
 * SIGTERM.
 */
public final class PageViewService {

  private PageViewService() {
  }

  public static void main(String[] args) {
    String url = System.getenv().getOrDefault("JDBC_URL",
        "jdbc:h2:file:./page-views-journal;DATABASE_TO_UPPER=false;AUTO_SERVER=TRUE;WRITE_DELAY=0");
    JournalDatabase journal = JournalDatabase.of(url, System.getenv().getOrDefault("JDBC_USER", "sa"),
        System.getenv().getOrDefault("JDBC_PASSWORD", ""));
    journal.installSchemaIfMissing();
    ActorSystem<Void> system = start(journal.pekkoConfig().withFallback(ConfigFactory.load()));
    // Stops on SIGTERM: Pekko's coordinated shutdown drains the pipeline's in-flight batches first.
    KafkaPipeline.create(system, PageViewCounter::new, new StringDeserializer(),
        PipelineSettings.create(system, "page-views")).start();
    system.getWhenTerminated().toCompletableFuture().join();
  }

  /**
   * The actor system the pipeline runs in. With the cluster provider, the node's cluster membership
   * runs beside it in an actor system of its own: when the cluster downs the node, only the
   * membership stops, and a new one joins again while the pipeline goes on consuming.
   */
  static ActorSystem<Void> start(Config config) {
    if (!"cluster".equals(config.getString("pekko.actor.provider"))) {
      return ActorSystem.create(Behaviors.empty(), "page-views", config);
    }
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "page-views",
        ClusterMembership.pipelineConfig(config));
    ClusterMembership.start(system, config);
    return system;
  }
}
