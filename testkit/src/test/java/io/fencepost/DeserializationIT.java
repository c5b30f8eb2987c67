package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import io.fencepost.internal.BatchEvent;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.IntegerDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Keys through a key deserializer, headers in order with repeats: what a plain Kafka consumer would see. */
@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class DeserializationIT {

  /** Journals what it saw of each record: "typed key | key text | every 'trace' header | last 'trace'". */
  static final class Observer extends PartitionActor<String, Long, String> {
    Observer(PartitionContext context) {
      super(context);
    }

    @Override
    protected Long emptyState() {
      return 0L;
    }

    @Override
    protected Effects<String> onRecord(Long state, Inbound<String> in) {
      String traces = in.headerValues("trace").stream().map(v -> new String(v, StandardCharsets.UTF_8))
          .collect(Collectors.joining(","));
      String names = in.headers().stream().map(Inbound.Header::name).collect(Collectors.joining(","));
      return Effects.persist(in.keyAs(Integer.class).map(String::valueOf).orElse("-") + "|" + traces + "|"
          + in.header("trace").orElse("-") + "|" + names + "|" + in.value());
    }

    @Override
    protected Long applyEvent(Long state, String event) {
      return state + 1;
    }
  }

  /** Records how it was configured. */
  static final class KeyDeserializer implements Deserializer<Integer> {
    private final IntegerDeserializer delegate = new IntegerDeserializer();
    volatile Boolean isKey;
    volatile boolean closed;

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
      this.isKey = isKey;
    }

    @Override
    public Integer deserialize(String topic, byte[] data) {
      return delegate.deserialize(topic, data);
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  @Test
  void keysGoThroughTheKeyDeserializerAndEveryHeaderIsKeptInOrder() throws Exception {
    JournalDatabase db = Postgres.shared().createDatabase("deserialization_it");
    db.installSchema();
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      String topic = KafkaBroker.uniqueName("keys");
      broker.createTopic(topic, 1);
      Properties p = new Properties();
      p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
      try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(),
          new ByteArraySerializer())) {
        send(producer, topic, new byte[] {0, 0, 1, 44}, "v0", "trace", "a", "x", "1", "trace", "b");
        send(producer, topic, new byte[] {7, 7, 7}, "v1", "trace", "c");   // not a 4-byte integer
        send(producer, topic, null, "v2");
      }
      ActorSystem<Void> system = KafkaPipelineIT.node("keys", db);
      try {
        KeyDeserializer keys = new KeyDeserializer();
        Pipeline pipeline = KafkaPipeline.create(system, Observer::new, new StringDeserializer(),
                PipelineSettings.create(system, "keys").withBootstrapServers(broker.bootstrapServers())
                    .withTopics(List.of(topic)).withGroupId(KafkaBroker.uniqueName("keys")))
            .withKeyDeserializer(keys).start();
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        List<PartitionView> views = List.of();
        while (System.nanoTime() < deadline) {
          views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
          if (!views.isEmpty() && views.get(0).nextOffset().orElse(0) == 3) {
            break;
          }
          Thread.sleep(200);
        }
        assertEquals(3, views.get(0).nextOffset().getAsLong(), "all three offsets passed: " + views);
        assertEquals(2, views.get(0).appliedRecords());
        assertEquals(1, views.get(0).deadLettered(), "the key the deserializer cannot read is dead-lettered");
        pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
        assertEquals(Boolean.TRUE, keys.isKey, "configured as a key deserializer");
        assertTrue(keys.closed, "closed when the pipeline stopped");

        assertEquals(List.of("300|a,b|b|trace,x,trace|v0", "-||-||v2"),
            events(system, new PartitionId(pipelineGroup(views), topic, 0)));
      } finally {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      }
    } finally {
      Postgres.shared().dropDatabase(db);
    }
  }

  private static String pipelineGroup(List<PartitionView> views) {
    return views.get(0).partition().group();
  }

  private static void send(KafkaProducer<byte[], byte[]> producer, String topic, byte[] key, String value,
      String... headers) throws Exception {
    ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, 0, key, value.getBytes(StandardCharsets.UTF_8));
    for (int i = 0; i < headers.length; i += 2) {
      r.headers().add(headers[i], headers[i + 1].getBytes(StandardCharsets.UTF_8));
    }
    producer.send(r).get();
  }

  private static List<String> events(ActorSystem<?> system, PartitionId partition) throws Exception {
    JdbcReadJournal journal = PersistenceQuery.get(system)
        .getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier());
    List<String> out = new ArrayList<>();
    journal.currentEventsByPersistenceId(partition.persistenceId(), 0, Long.MAX_VALUE)
        .runForeach(env -> {
          for (Object e : ((BatchEvent) env.event()).events()) {
            out.add((String) e);
          }
        }, system).toCompletableFuture().get(60, TimeUnit.SECONDS);
    return out;
  }
}
