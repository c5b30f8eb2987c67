package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineHealth;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.embedded.Directories;
import io.fencepost.embedded.FreePorts;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.PoisonPill;
import org.apache.pekko.actor.typed.ActorSystem;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Outages of the real services mid-stream: PostgreSQL stopped for 20 s, and the Kafka broker
 * restarted. The pipeline backs off and resumes by itself; nothing is skipped or doubled.
 */
@Tag("integration")
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class JournalOutageIT {

  @Test
  void postgresDownForTwentySecondsMidStreamLosesNothingAndDoublesNothing() throws Exception {
    Path dir = Files.createTempDirectory("fencepost-pg-outage-");
    Postgres pg = Postgres.startEmbedded(dir.resolve("data"), FreePorts.next());
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      JournalDatabase db = pg.createDatabase("outage");
      db.installSchema();
      String topic = KafkaBroker.uniqueName("outage");
      broker.createTopic(topic, 4);
      ActorSystem<Void> system = KafkaPipelineIT.node("outage", db);
      try {
        // The plugins are checked every second; one missing for 5 s would make the node not live.
        PipelineSettings settings = PipelineSettings.create(system, "outage")
            .withBootstrapServers(broker.bootstrapServers()).withTopics(List.of(topic))
            .withGroupId(KafkaBroker.uniqueName("outage-group"))
            .withStallTimeout(Duration.ofSeconds(4)).withDeadAfter(Duration.ofSeconds(5));
        Pipeline pipeline = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "outage"),
            new KafkaPipelineIT.PaymentDeserializer(), settings).start();
        long[] produced = new long[4];
        Thread producer = new Thread(() -> {
          long[] p = produceSlowly(broker, topic, 16_000, 800);
          System.arraycopy(p, 0, produced, 0, 4);
        });
        producer.start();
        Thread.sleep(5_000);
        pg.stopServer();
        System.out.println("PostgreSQL stopped");
        // A database away is no reason to restart the node: its plugins answer (with failures).
        long outageEnds = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < outageEnds) {
          PipelineHealth health = pipeline.health();
          assertTrue(health.live(), "live while PostgreSQL is down: " + health);
          Thread.sleep(200);
        }
        pg.startServer();
        long restarted = System.nanoTime();
        System.out.println("PostgreSQL started again");
        producer.join();
        long total = 16_000;
        awaitApplied(pipeline, total, Duration.ofMinutes(4));
        System.out.printf("caught up %.1f s after PostgreSQL came back%n", (System.nanoTime() - restarted) / 1e9);
        List<PartitionView> views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
        pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
        long retries = 0;
        for (PartitionView v : views) {
          int part = v.partition().partition();
          Map<Long, Integer> credits = KafkaPipelineIT.creditsPerOffset(system, v.partition());
          assertEquals(produced[part], credits.size(), "offsets credited on partition " + part);
          assertTrue(credits.values().stream().allMatch(n -> n == 1), "every offset once on partition " + part);
          retries += v.retries();
        }
        assertTrue(retries > 0, "the outage was felt: batches were resent");
      } finally {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      }
    } finally {
      pg.startServer();
      pg.close();
      Directories.deleteRecursively(dir);
    }
  }

  /**
   * A journal plugin actor that stopped in the JVM (its restart after a failure threw, or its start
   * was cut short: Pekko never starts it again) fails every recovery and write of the node until the
   * process restarts: the node turns not ready at once, then not live once the plugin has been
   * missing for dead-after.
   */
  @Test
  void aJournalPluginThatDiedMakesTheNodeNotLiveAfterDeadAfter() throws Exception {
    JournalDatabase db = Postgres.shared().createDatabase("dead_plugin");
    db.installSchema();
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      String topic = KafkaBroker.uniqueName("deadplugin");
      broker.createTopic(topic, 2);
      ActorSystem<Void> system = KafkaPipelineIT.node("deadplugin", db);
      try {
        PipelineSettings settings = PipelineSettings.create(system, "deadplugin")
            .withBootstrapServers(broker.bootstrapServers()).withTopics(List.of(topic))
            .withGroupId(KafkaBroker.uniqueName("deadplugin-group"))
            .withStallTimeout(Duration.ofSeconds(4)).withDeadAfter(Duration.ofSeconds(5));
        Pipeline pipeline = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "deadplugin"),
            new KafkaPipelineIT.PaymentDeserializer(), settings).start();
        KafkaPipelineIT.produceTo(broker, topic, 2, 200, "a-");
        awaitApplied(pipeline, 200, Duration.ofMinutes(2));
        long settle = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!pipeline.health().ready() && System.nanoTime() < settle) {
          Thread.sleep(100);
        }
        assertTrue(pipeline.health().ready(), pipeline.health().toString());

        String plugin = system.settings().config().getString("pekko.persistence.journal.plugin");
        system.classicSystem().actorSelection("/system/" + plugin).tell(PoisonPill.getInstance(), ActorRef.noSender());
        long killed = System.nanoTime();
        PipelineHealth health = pipeline.health();
        // Checked every second: not ready at once, then not live after dead-after (5 s).
        while (health.ready() && System.nanoTime() - killed < TimeUnit.SECONDS.toNanos(60)) {
          Thread.sleep(100);
          health = pipeline.health();
        }
        assertTrue(health.live(), "live until dead-after: " + health);
        assertFalse(health.ready(), "not ready once the plugin is missing: " + health);
        assertTrue(health.reason().startsWith("[deadplugin] the persistence plugin(s) [" + plugin + "] no longer run "
            + "in this JVM (for "), health.reason());
        while (health.live() && System.nanoTime() - killed < TimeUnit.SECONDS.toNanos(60)) {
          Thread.sleep(100);
          health = pipeline.health();
        }
        double after = (System.nanoTime() - killed) / 1e9;
        System.out.printf("not live %.1f s after the journal plugin stopped: %s%n", after, health.reason());
        assertFalse(health.live(), "not live: " + health);
        assertTrue(after >= 5, "not before dead-after: " + after + " s");
        assertTrue(health.reason().endsWith("past dead-after (5 s): only a restart brings it back"), health.reason());
      } finally {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      }
    } finally {
      Postgres.shared().dropDatabase(db);
    }
  }

  @Test
  void brokerRestartMidStreamLosesNothingAndDoublesNothing() throws Exception {
    JournalDatabase db = Postgres.shared().createDatabase("broker_outage");
    db.installSchema();
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      String topic = KafkaBroker.uniqueName("brokerdown");
      broker.createTopic(topic, 4);
      long[] first = KafkaPipelineIT.produceTo(broker, topic, 4, 6_000, "a-");
      ActorSystem<Void> system = KafkaPipelineIT.node("brokerdown", db);
      try {
        PipelineSettings settings = PipelineSettings.create(system, "brokerdown")
            .withBootstrapServers(broker.bootstrapServers()).withTopics(List.of(topic))
            .withGroupId(KafkaBroker.uniqueName("brokerdown-group"));
        Pipeline pipeline = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "brokerdown"),
            new KafkaPipelineIT.PaymentDeserializer(), settings).start();
        Thread.sleep(1_500);
        broker.stop();
        Thread.sleep(10_000);
        broker.start();
        long[] second = KafkaPipelineIT.produceTo(broker, topic, 4, 6_000, "b-");
        awaitApplied(pipeline, 12_000, Duration.ofMinutes(4));
        List<PartitionView> views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
        pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
        for (PartitionView v : views) {
          int part = v.partition().partition();
          Map<Long, Integer> credits = KafkaPipelineIT.creditsPerOffset(system, v.partition());
          assertEquals(first[part] + second[part], credits.size(), "offsets credited on partition " + part);
          assertTrue(credits.values().stream().allMatch(n -> n == 1), "every offset once on partition " + part);
        }
      } finally {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      }
    } finally {
      Postgres.shared().dropDatabase(db);
    }
  }

  private static long[] produceSlowly(KafkaBroker broker, String topic, int count, int perSecond) {
    return KafkaPipelineIT.produceTo(broker, topic, 4, count, "slow-", perSecond);
  }

  private static void awaitApplied(Pipeline pipeline, long total, Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      long applied = 0;
      try {
        for (PartitionView v : pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS)) {
          applied += v.nextOffset().orElse(0);
        }
      } catch (Exception e) {
        // status may time out while a service is down
      }
      if (applied >= total) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("applied " + applied + " of " + total + " within " + timeout);
      }
      Thread.sleep(500);
    }
  }
}
