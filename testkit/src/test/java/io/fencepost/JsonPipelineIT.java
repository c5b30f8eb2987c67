package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.kafka.serde.JsonDeserializer;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * JSON keys and values through {@link JsonDeserializer} on a real broker and journal: a value with a
 * field of the wrong type, a value missing a field and a key that is not JSON are each dead-lettered
 * with a message naming the part, the field and the error; the valid records are applied once.
 */
@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class JsonPipelineIT {

  record Order(String orderId, String sku, int quantity) {
  }

  record Store(String store) {
  }

  record Reserved(String orderId, String store, String sku, int quantity) implements JacksonSerializable {
  }

  record Stock(Map<String, Integer> reserved) implements JacksonSerializable {
  }

  /** Reserves stock per SKU; the store comes from the record's JSON key. */
  static final class Reservations extends PartitionActor<Order, Stock, Reserved> {
    Reservations(PartitionContext context) {
      super(context);
    }

    @Override
    protected Stock emptyState() {
      return new Stock(Map.of());
    }

    @Override
    protected Effects<Reserved> onRecord(Stock stock, Inbound<Order> in) {
      Order o = in.value();
      String store = in.keyAs(Store.class).map(Store::store).orElse("none");
      return Effects.persist(new Reserved(o.orderId(), store, o.sku(), o.quantity()));
    }

    @Override
    protected Stock applyEvent(Stock stock, Reserved e) {
      Map<String, Integer> next = new TreeMap<>(stock.reserved());
      next.merge(e.sku(), e.quantity(), Integer::sum);
      return new Stock(next);
    }

    @Override
    protected Optional<String> businessKey(Inbound<Order> in) {
      return Optional.of(in.value().orderId());
    }
  }

  @Test
  void badJsonInTheValueOrTheKeyIsDeadLetteredNamingTheFieldAndTheRestIsAppliedOnce() throws Exception {
    JournalDatabase db = Postgres.shared().createDatabase("json_pipeline_it");
    db.installSchema();
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      String topic = KafkaBroker.uniqueName("orders");
      broker.createTopic(topic, 1);
      List<String[]> records = List.of(
          new String[] {"{\"store\":\"s1\"}", "{\"orderId\":\"o-0\",\"sku\":\"apple\",\"quantity\":2}"},
          new String[] {"{\"store\":\"s1\"}", "{\"orderId\":\"o-1\",\"sku\":\"apple\",\"quantity\":\"two\"}"},
          new String[] {"{\"store\":\"s1\"}", "{\"orderId\":\"o-2\",\"sku\":\"pear\"}"},
          new String[] {"s2", "{\"orderId\":\"o-3\",\"sku\":\"pear\",\"quantity\":1}"},
          new String[] {"{\"store\":\"s2\"}", "{\"orderId\":\"o-4\",\"sku\":\"pear\",\"quantity\":3}"});
      Properties p = new Properties();
      p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
      try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(),
          new StringSerializer())) {
        for (String[] r : records) {
          producer.send(new ProducerRecord<>(topic, 0, r[0], r[1])).get();
        }
      }

      ActorSystem<Void> system = KafkaPipelineIT.node("jsonpipeline", db);
      PipelineSettings settings = PipelineSettings.create(system, "jsonpipeline")
          .withBootstrapServers(broker.bootstrapServers()).withTopics(List.of(topic))
          .withGroupId(KafkaBroker.uniqueName("json-group"));
      try {
        Pipeline pipeline = KafkaPipeline.create(system, Reservations::new, JsonDeserializer.of(Order.class), settings)
            .withKeyDeserializer(JsonDeserializer.of(Store.class)).start();
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS).stream()
            .mapToLong(v -> v.nextOffset().orElse(0)).sum() < records.size() && System.nanoTime() < deadline) {
          Thread.sleep(200);
        }
        pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);

        List<Object> events = new ArrayList<>();
        Map<Long, String> deadInJournal = new TreeMap<>();
        PersistenceQuery.get(system).getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier())
            .currentEventsByPersistenceId(new PartitionId(settings.groupId(), topic, 0).persistenceId(), 0, Long.MAX_VALUE)
            .runForeach(env -> AppliedBatch.from(env.event()).ifPresent(b -> {
              events.addAll(b.events());
              b.deadLetters().forEach(d -> deadInJournal.put(d.offset(), d.errorClass()));
            }), system).toCompletableFuture().get(60, TimeUnit.SECONDS);
        assertEquals(List.of(new Reserved("o-0", "s1", "apple", 2), new Reserved("o-4", "s2", "pear", 3)), events);
        String refused = SerializationException.class.getName();
        assertEquals(Map.of(1L, refused, 2L, refused, 3L, refused), deadInJournal);
      } finally {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
        Postgres.shared().dropDatabase(db);
      }

      Map<Long, String> messages = new TreeMap<>();
      for (ConsumerRecord<byte[], byte[]> r : deadLetters(broker, settings.deadLetter().topicFor(topic), 3)) {
        long offset = Long.parseLong(header(r, "fencepost.original.offset"));
        assertEquals(records.get((int) offset)[1], new String(r.value(), StandardCharsets.UTF_8), "value kept");
        assertEquals(records.get((int) offset)[0], new String(r.key(), StandardCharsets.UTF_8), "key kept");
        messages.put(offset, header(r, "fencepost.error.message"));
      }
      assertEquals(3, messages.size(), "dead letters: " + messages);
      assertTrue(messages.get(1L).startsWith("not valid JSON for Order on topic [" + topic + "] at /quantity: Cannot "
          + "deserialize value of type `int` from String \"two\": not a valid `int` value (line 1, column "),
          messages.get(1L));
      assertTrue(messages.get(2L).startsWith("not valid JSON for Order on topic [" + topic + "] at /quantity: Cannot "
          + "map `null` into type `int`"), messages.get(2L));
      assertTrue(messages.get(3L).startsWith("not valid JSON for Store (the record's key) on topic [" + topic + "]: "
          + "Unrecognized token 's2'"), messages.get(3L));
    }
  }

  private static String header(ConsumerRecord<byte[], byte[]> r, String name) {
    return new String(r.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
  }

  private static List<ConsumerRecord<byte[], byte[]>> deadLetters(KafkaBroker broker, String topic, int count) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
        new ByteArrayDeserializer())) {
      List<TopicPartition> tps = new ArrayList<>();
      c.partitionsFor(topic).forEach(pi -> tps.add(new TopicPartition(topic, pi.partition())));
      c.assign(tps);
      c.seekToBeginning(tps);
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (out.size() < count && System.nanoTime() < deadline) {
        c.poll(Duration.ofMillis(200)).forEach(out::add);
      }
    }
    return out;
  }
}
