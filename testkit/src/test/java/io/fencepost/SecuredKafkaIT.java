package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.fencepost.errors.SettingsException;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.DeadLetterReplay;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import io.fencepost.embedded.Topics;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

/**
 * A cluster whose clients must log in (SASL_PLAINTEXT, SCRAM-SHA-512): one set of client properties
 * reaches every client the pipeline makes (consumer, admin, log probe, dead-letter and outbox
 * producers) and dead-letter replay; a wrong password fails the start with one line; no secret is
 * logged. The broker's PLAINTEXT listener serves only the test's own producer and checks.
 */
@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class SecuredKafkaIT {

  private static final String USER = "fencepost-svc";
  private static final String PASSWORD = "s3cret-Pw-4711";
  private static final String WRONG = "Wr0ng-Pw-0815";

  /** Values are text; "poison" cannot be read. */
  static final class Text implements Deserializer<String> {
    @Override
    public String deserialize(String topic, byte[] data) {
      String s = new String(data, StandardCharsets.UTF_8);
      if (s.startsWith("poison")) {
        throw new SerializationException("unreadable value [" + s + "]");
      }
      return s;
    }
  }

  /** Journals each value and announces it on the outbox topic. */
  static final class Announcer extends PartitionActor<String, Long, String> {
    private final String outboxTopic;

    Announcer(PartitionContext context, String outboxTopic) {
      super(context);
      this.outboxTopic = outboxTopic;
    }

    @Override
    protected Long emptyState() {
      return 0L;
    }

    @Override
    protected Effects<String> onRecord(Long state, Inbound<String> in) {
      return Effects.persist(in.value()).andPublish(outboxTopic, null, "announced " + in.value());
    }

    @Override
    protected Long applyEvent(Long state, String event) {
      return state + 1;
    }
  }

  @Test
  void everyClientLogsInWithTheCommonPropertiesAndAWrongPasswordFailsTheStartInOneLine() throws Exception {
    ListAppender<ILoggingEvent> logs = new ListAppender<>();
    Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    logs.start();
    root.addAppender(logs);
    // Kafka's clients print their whole configuration at INFO: where a leaked secret would show.
    Logger kafka = (Logger) LoggerFactory.getLogger("org.apache.kafka");
    Logger fencepost = (Logger) LoggerFactory.getLogger("io.fencepost");
    Level kafkaLevel = kafka.getLevel();
    Level fencepostLevel = fencepost.getLevel();
    kafka.setLevel(Level.INFO);
    fencepost.setLevel(Level.DEBUG);
    JournalDatabase db = Postgres.shared().createDatabase("secured_it");
    db.installSchema();
    try (KafkaBroker broker = KafkaBroker.create().withScramUser(USER, PASSWORD).start()) {
      String topic = KafkaBroker.uniqueName("secured");
      String announcements = topic + "-announced";
      broker.createTopic(topic, 1);
      broker.createTopic(announcements, 1);
      Properties p = new Properties();
      p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());   // the test's own: PLAINTEXT
      try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(),
          new StringSerializer())) {
        for (int i = 0; i < 20; i++) {
          producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)).get();
        }
        producer.send(new ProducerRecord<>(topic, 0, "k-poison", "poison-1")).get();
      }
      ActorSystem<Void> system = KafkaPipelineIT.node("secured", db);
      try {
        PipelineSettings settings = PipelineSettings.create(system, "secured")
            .withBootstrapServers(broker.saslBootstrapServers())
            .withTopics(List.of(topic))
            .withGroupId(KafkaBroker.uniqueName("secured"))
            .withCommonKafkaClients(KafkaBroker.scramClientProperties(USER, PASSWORD));
        settings = settings.withOutbox(settings.outbox().withEnabled(true));

        PipelineSettings wrong = settings.withCommonKafkaClients(KafkaBroker.scramClientProperties(USER, WRONG));
        SettingsException refused = assertThrows(SettingsException.class,
            () -> KafkaPipeline.create(system, ctx -> new Announcer(ctx, announcements), new Text(), wrong).start());
        assertEquals("fencepost.pipelines.secured.common-kafka-clients", refused.key());
        assertTrue(refused.getMessage().contains("was refused by Kafka at " + broker.saslBootstrapServers()),
            refused.getMessage());
        assertFalse(refused.getMessage().contains("\n"), "one line: " + refused.getMessage());
        assertFalse(refused.getMessage().contains(WRONG), "no password in the error");

        Pipeline pipeline = KafkaPipeline.create(system, ctx -> new Announcer(ctx, announcements), new Text(), settings)
            .start();
        awaitNextOffset(pipeline, 21);
        awaitCount(broker, topic + ".dlt", 1);   // the dead-letter producer logged in
        awaitCount(broker, announcements, 20);   // so did the outbox relay's producer

        DeadLetterReplay.Result replay = DeadLetterReplay.from(broker.saslBootstrapServers(), topic + ".dlt")
            .withKafkaClients(KafkaBroker.scramClientProperties(USER, PASSWORD)).run();
        assertEquals(1, replay.replayed());
        awaitNextOffset(pipeline, 22);   // the replay was read (and, still unreadable, dead-lettered again)
        awaitCount(broker, topic + ".dlt", 2);
        List<PartitionView> views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertEquals(20, views.get(0).appliedRecords());
        assertEquals(2, views.get(0).deadLettered());
        pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      } finally {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      }
    } finally {
      root.detachAppender(logs);
      kafka.setLevel(kafkaLevel);
      fencepost.setLevel(fencepostLevel);
      Postgres.shared().dropDatabase(db);
    }
    List<String> lines = logs.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
    assertTrue(lines.stream().anyMatch(l -> l.contains("ProducerConfig values") && l.contains("sasl.jaas.config = [hidden]")),
        "the producers' configuration was captured");
    assertTrue(lines.stream().anyMatch(l -> l.contains("ConsumerConfig values") && l.contains("sasl.jaas.config = [hidden]")),
        "the consumers' configuration was captured");
    for (String line : lines) {
      assertFalse(line.contains(PASSWORD) || line.contains(WRONG), "a password in the log: " + line);
    }
  }

  private static void awaitNextOffset(Pipeline pipeline, long offset) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    List<PartitionView> views = List.of();
    while (System.nanoTime() < deadline) {
      views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
      if (!views.isEmpty() && views.get(0).nextOffset().orElse(0) >= offset) {
        return;
      }
      Thread.sleep(200);
    }
    throw new AssertionError("stored offset did not reach " + offset + ": " + views);
  }

  private static void awaitCount(KafkaBroker broker, String topic, long count) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    long n = 0;
    while (System.nanoTime() < deadline) {
      n = Topics.recordCount(broker.bootstrapServers(), topic);
      if (n >= count) {
        assertEquals(count, n, topic);
        return;
      }
      Thread.sleep(200);
    }
    throw new AssertionError(topic + " holds " + n + " records, expected " + count);
  }
}
