package com.example.pageviews;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PipelineSettings;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The service: one node of page-views. The journal database comes from the environment
 * ({@code JDBC_URL}, {@code JDBC_USER}, {@code JDBC_PASSWORD}; never from the command line, where
 * {@code ps} would show the password), everything else from {@code application.conf}. Exits 0 after
 * SIGTERM, and {@value #DOWNED} when a Pekko Cluster downed the node (with the cluster provider).
 */
public final class PageViewService {

  /** The exit status when the cluster downed this node: a supervisor should start it again. */
  public static final int DOWNED = 3;

  private PageViewService() {
  }

  public static void main(String[] args) {
    String url = System.getenv().getOrDefault("JDBC_URL",
        "jdbc:h2:file:./page-views-journal;DATABASE_TO_UPPER=false;AUTO_SERVER=TRUE");
    JournalDatabase journal = JournalDatabase.of(url, System.getenv().getOrDefault("JDBC_USER", "sa"),
        System.getenv().getOrDefault("JDBC_PASSWORD", ""));
    journal.installSchemaIfMissing();
    Config config = journal.pekkoConfig().withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "page-views", config);
    // Stops on SIGTERM: Pekko's coordinated shutdown drains the pipeline's in-flight batches first.
    KafkaPipeline.create(system, PageViewCounter::new, new StringDeserializer(),
        PipelineSettings.create(system, "page-views")).start();
    system.getWhenTerminated().toCompletableFuture().join();
    if (exitStatus(system) == DOWNED) {
      System.err.println("page-views: this node was downed by the cluster (the split-brain resolver or an "
          + "operator) and stopped; exit status " + DOWNED + ": start it again");
      System.exit(DOWNED);
    }
  }

  /** {@value #DOWNED} when the cluster downed the (terminated) system, else 0. */
  static int exitStatus(ActorSystem<?> system) {
    return CoordinatedShutdown.get(system).getShutdownReason()
        .filter(CoordinatedShutdown.clusterDowningReason()::equals).isPresent() ? DOWNED : 0;
  }
}
