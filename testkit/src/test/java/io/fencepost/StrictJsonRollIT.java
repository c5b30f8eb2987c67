package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.DeadLetterReplay;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.kafka.serde.JsonDeserializer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A producer rolled before its consumers: version 2 values (a new field, {@code channel}) reach a
 * version 1 node reading with {@link JsonDeserializer#strict}. Each is dead-lettered naming the field
 * instead of being applied without it; after the roll the version 2 node applies the replayed dead
 * letters, and every version 2 purchase's channel is in the journal: no field lost, no purchase
 * applied twice.
 */
@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class StrictJsonRollIT {

  private static final int V1 = 40;
  private static final int V2 = 60;

  record PurchaseV1(String orderId, String customer, int points) {
  }

  record PurchaseV2(String orderId, String customer, int points, String channel) {
  }

  /** Journaled by both versions; version 1 knows no channel (null). */
  record Awarded(String orderId, int points, String channel) implements JacksonSerializable {
  }

  record Points(Map<String, Integer> byCustomer) implements JacksonSerializable {
  }

  abstract static class Loyalty<V> extends PartitionActor<V, Points, Awarded> {
    Loyalty(PartitionContext context) {
      super(context);
    }

    @Override
    protected Points emptyState() {
      return new Points(Map.of());
    }

    @Override
    protected Points applyEvent(Points points, Awarded e) {
      Map<String, Integer> next = new TreeMap<>(points.byCustomer());
      next.merge(e.orderId(), e.points(), Integer::sum);
      return new Points(next);
    }
  }

  static final class LoyaltyV1 extends Loyalty<PurchaseV1> {
    LoyaltyV1(PartitionContext context) {
      super(context);
    }

    @Override
    protected Effects<Awarded> onRecord(Points points, Inbound<PurchaseV1> in) {
      return Effects.persist(new Awarded(in.value().orderId(), in.value().points(), null));
    }

    @Override
    protected Optional<String> businessKey(Inbound<PurchaseV1> in) {
      return Optional.of(in.value().orderId());
    }
  }

  static final class LoyaltyV2 extends Loyalty<PurchaseV2> {
    LoyaltyV2(PartitionContext context) {
      super(context);
    }

    @Override
    protected Effects<Awarded> onRecord(Points points, Inbound<PurchaseV2> in) {
      return Effects.persist(new Awarded(in.value().orderId(), in.value().points(), in.value().channel()));
    }

    @Override
    protected Optional<String> businessKey(Inbound<PurchaseV2> in) {
      return Optional.of(in.value().orderId());
    }
  }

  @Test
  void versionTwoValuesReachingAStrictVersionOneNodeAreDeadLetteredAndReplayedWithTheirNewField() throws Exception {
    JournalDatabase db = Postgres.shared().createDatabase("strict_json_roll_it");
    db.installSchema();
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      String topic = KafkaBroker.uniqueName("purchases");
      broker.createTopic(topic, 1);
      Properties p = new Properties();
      p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
      try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(),
          new StringSerializer())) {
        for (int i = 0; i < V1 + V2; i++) {   // the producer rolled after V1 records
          String value = i < V1
              ? "{\"orderId\":\"o-" + i + "\",\"customer\":\"c" + i % 7 + "\",\"points\":" + i + "}"
              : "{\"orderId\":\"o-" + i + "\",\"customer\":\"c" + i % 7 + "\",\"points\":" + i
                  + ",\"channel\":\"web-" + i + "\"}";
          producer.send(new ProducerRecord<>(topic, 0, "c" + i % 7, value)).get();
        }
      }
      String group = KafkaBroker.uniqueName("loyalty");

      ActorSystem<Void> v1 = KafkaPipelineIT.node("loyalty-v1", db);
      PipelineSettings settings1 = settings(v1, broker, topic, group);
      try {
        Pipeline pipeline = KafkaPipeline.create(v1, LoyaltyV1::new, JsonDeserializer.strict(PurchaseV1.class),
            settings1).start();
        PartitionView view = awaitNextOffset(pipeline, V1 + V2);
        assertEquals(V1, view.appliedRecords(), "version 1 values applied");
        assertEquals(V2, view.deadLettered(), "every version 2 value refused, none applied without its channel");
        pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      } finally {
        stop(v1);
      }

      String dlt = settings1.deadLetter().topicFor(topic);
      DeadLetterReplay.Result replayed = DeadLetterReplay.from(broker.bootstrapServers(), dlt).run();
      assertEquals(V2, replayed.replayed(), "replayed: " + replayed);

      ActorSystem<Void> v2 = KafkaPipelineIT.node("loyalty-v2", db);
      try {
        Pipeline pipeline = KafkaPipeline.create(v2, LoyaltyV2::new, JsonDeserializer.strict(PurchaseV2.class),
            settings(v2, broker, topic, group)).start();
        PartitionView view = awaitNextOffset(pipeline, V1 + V2 + V2);
        assertEquals(V1 + V2, view.appliedRecords(), "the replayed values too, applied by version 2");
        assertEquals(V2, view.deadLettered(), "no more dead letters");
        pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);

        Map<String, String> channels = new TreeMap<>();
        PersistenceQuery.get(v2).getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier())
            .currentEventsByPersistenceId(new PartitionId(group, topic, 0).persistenceId(), 0, Long.MAX_VALUE)
            .runForeach(env -> AppliedBatch.from(env.event()).ifPresent(b -> b.events().forEach(e -> {
              Awarded a = (Awarded) e;
              String before = channels.put(a.orderId(), String.valueOf(a.channel()));
              assertEquals(null, before, a.orderId() + " applied twice");
            })), v2).toCompletableFuture().get(60, TimeUnit.SECONDS);
        assertEquals(V1 + V2, channels.size(), "every purchase applied once");
        for (int i = 0; i < V1 + V2; i++) {
          assertEquals(i < V1 ? "null" : "web-" + i, channels.get("o-" + i), "o-" + i + "'s channel");
        }
      } finally {
        stop(v2);
        Postgres.shared().dropDatabase(db);
      }
    }
  }

  @Test
  void aStrictDeserializerNamesTheUnknownFieldAndTheWayOut() {
    Exception e = org.junit.jupiter.api.Assertions.assertThrows(
        org.apache.kafka.common.errors.SerializationException.class, () -> JsonDeserializer.strict(PurchaseV1.class)
            .deserialize("purchases", "{\"orderId\":\"o\",\"customer\":\"c\",\"points\":1,\"channel\":\"web\"}"
                .getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    assertTrue(e.getMessage().startsWith("not valid JSON for PurchaseV1 on topic [purchases] at /channel: "
        + "Unrecognized field \"channel\""), e.getMessage());
    assertTrue(e.getMessage().endsWith("this version does not know that field (strict): replay the dead letter once "
        + "every node runs one that does, or fix the producer"), e.getMessage());
    assertEquals(new PurchaseV1("o", "c", 1), JsonDeserializer.of(PurchaseV1.class).deserialize("purchases",
        "{\"orderId\":\"o\",\"customer\":\"c\",\"points\":1,\"channel\":\"web\"}"
            .getBytes(java.nio.charset.StandardCharsets.UTF_8)), "the lenient default drops the field");
  }

  private static PipelineSettings settings(ActorSystem<?> system, KafkaBroker broker, String topic, String group) {
    return PipelineSettings.create(system, "loyalty").withBootstrapServers(broker.bootstrapServers())
        .withTopics(List.of(topic)).withGroupId(group);
  }

  private static PartitionView awaitNextOffset(Pipeline pipeline, long next) throws Exception {
    PartitionView[] last = new PartitionView[1];
    Await.until("next offset " + next, Duration.ofMinutes(2), () -> {
      List<PartitionView> views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
      last[0] = views.isEmpty() ? null : views.get(0);
      return last[0] != null && last[0].nextOffset().orElse(0) >= next;
    });
    return last[0];
  }

  private static void stop(ActorSystem<Void> system) throws Exception {
    system.terminate();
    system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
  }
}
