package io.fencepost.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.ConfigFactory;
import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;
import io.fencepost.examples.Credited;
import io.fencepost.examples.Ledger;
import io.fencepost.examples.Payment;
import io.fencepost.examples.PaymentJson;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.embedded.ClusterNodes;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import io.fencepost.reconciliation.Reconciliation;
import io.fencepost.reconciliation.ReconciliationReport;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Reconciliation finds each planted fault: a removed effect, a doubled effect, a producer sequence gap. */
@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class ReconciliationIT {

  /** A broken ledger: forgets pay-5's effect and applies pay-7's twice. */
  static final class Broken extends PartitionActor<Payment, Ledger, Credited> {
    Broken(PartitionContext context) {
      super(context);
    }

    @Override
    protected Ledger emptyState() {
      return Ledger.EMPTY;
    }

    @Override
    protected Effects<Credited> onRecord(Ledger ledger, Inbound<Payment> in) {
      Payment p = in.value();
      Credited c = new Credited(p.merchantId(), p.amountCents(), p.paymentId(), in.offset());
      return switch (p.paymentId()) {
        case "pay-5" -> Effects.none();
        case "pay-7" -> Effects.persist(c, c);
        default -> Effects.persist(c);
      };
    }

    @Override
    protected Ledger applyEvent(Ledger ledger, Credited e) {
      return ledger.credit(e);
    }
  }

  @Test
  void verifyFindsAMissingEffectADoubledEffectAndASequenceGap() throws Exception {
    JournalDatabase db = Postgres.shared().createDatabase("reconciliation_it");
    db.installSchema();
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      String topic = KafkaBroker.uniqueName("planted");
      broker.createTopic(topic, 2);
      Properties p = new Properties();
      p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
      int[] seq = new int[2];
      PaymentJson json = new PaymentJson();
      try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(p, new StringSerializer(),
          new ByteArraySerializer())) {
        for (int i = 0; i < 20; i++) {
          int entity = i % 2;
          seq[entity]++;
          if (entity == 0 && seq[entity] == 4) {
            seq[entity]++;   // planted: merchant m0's record #4 never reached Kafka
          }
          ProducerRecord<String, byte[]> r = new ProducerRecord<>(topic, entity, "m" + entity,
              json.serialize(topic, new Payment("pay-" + i, "m" + entity, 100)));
          r.headers().add("seq", Integer.toString(seq[entity]).getBytes(StandardCharsets.UTF_8));
          producer.send(r).get();
        }
      }
      ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "planted",
          ClusterNodes.node("planted", 0, List.of()).withFallback(db.pekkoConfig()).withFallback(ConfigFactory.load()));
      ClusterNodes.joinSelf(system, Duration.ofSeconds(30));
      String group = KafkaBroker.uniqueName("planted-group");
      try {
        Pipeline pipeline = KafkaPipeline.create(system, Broken::new, json,
            PipelineSettings.create(system, "planted").withBootstrapServers(broker.bootstrapServers())
                .withTopics(List.of(topic)).withGroupId(group)).start();
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS).stream()
            .mapToLong(v -> v.nextOffset().orElse(0)).sum() < 20 && System.nanoTime() < deadline) {
          Thread.sleep(200);
        }
        pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      } finally {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      }

      ReconciliationReport report = Reconciliation.of(broker.bootstrapServers(), topic, group, db)
          .inputKeys(r -> Optional.of(json.deserialize(topic, r.value()).paymentId()))
          .effectKeys(e -> Optional.of(((Credited) e).paymentId()))
          .sequenceHeader("seq")
          .run();
      System.out.println(report.render());
      assertFalse(report.ok());
      assertEquals(20, report.total().records());
      assertEquals(20, report.total().expected());
      assertEquals(19, report.total().applied());
      assertEquals(1, report.total().missing());
      assertEquals(List.of("pay-5"), report.sampleMissing());
      assertEquals(1, report.total().doubled());
      assertEquals(List.of("pay-7"), report.sampleDoubled());
      assertEquals(1, report.sequenceGaps());
      assertEquals(List.of("m0#4"), report.sampleGaps());
      assertTrue(report.verdict().startsWith("VERDICT FAILED: 20 distinct keys expected, 19 applied, 1 missing, "
          + "1 doubled"), report.verdict());
      assertTrue(report.toJson().contains("\"missing\":1"), report.toJson());
    } finally {
      Postgres.shared().dropDatabase(db);
    }
  }

  /** Any pipeline: values are journaled as they are; the business key is header "k". */
  static final class Echo extends PartitionActor<String, Long, String> {
    Echo(PartitionContext context) {
      super(context);
    }

    @Override
    protected Long emptyState() {
      return 0L;
    }

    @Override
    protected Effects<String> onRecord(Long state, Inbound<String> in) {
      return Effects.persist(in.value());
    }

    @Override
    protected Long applyEvent(Long state, String event) {
      return state + 1;
    }
  }

  @Test
  void verifyChecksAnyPipelineByTheBusinessKeysItsJournalRecords() throws Exception {
    JournalDatabase db = Postgres.shared().createDatabase("verify_any_it");
    db.installSchema();
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      String topic = KafkaBroker.uniqueName("any");
      broker.createTopic(topic, 1);
      String group = KafkaBroker.uniqueName("any-group");
      Properties p = new Properties();
      p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
      try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(),
          new StringSerializer())) {
        for (String k : List.of("k1", "k2", "k3", "k4", "k5", "k1")) {   // k1 re-sent by a producer
          ProducerRecord<String, String> r = new ProducerRecord<>(topic, 0, null, "v-" + k);
          r.headers().add("k", k.getBytes(StandardCharsets.UTF_8));
          producer.send(r).get();
        }
        producer.send(new ProducerRecord<>(topic, 0, null, "keyless")).get();
      }
      ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "any",
          ClusterNodes.node("any", 0, List.of()).withFallback(db.pekkoConfig()).withFallback(ConfigFactory.load()));
      ClusterNodes.joinSelf(system, Duration.ofSeconds(30));
      try {
        PipelineSettings settings = PipelineSettings.create(system, "any").withBootstrapServers(
            broker.bootstrapServers()).withTopics(List.of(topic)).withGroupId(group).withBatch(1, Duration.ofMillis(20));
        // planted: a window of 2 keys has forgotten k1 when its re-send arrives, so k1 is applied twice
        settings = settings.withPartitionActor(settings.partitionActor().withKeyHeader("k")
            .withKeyWindow(true, 2, Duration.ofHours(1)));
        Pipeline pipeline = KafkaPipeline.create(system, Echo::new, new StringDeserializer(), settings).start();
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS).stream()
            .mapToLong(v -> v.nextOffset().orElse(0)).sum() < 7 && System.nanoTime() < deadline) {
          Thread.sleep(200);
        }
        pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      } finally {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      }
      try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(),
          new StringSerializer())) {
        ProducerRecord<String, String> late = new ProducerRecord<>(topic, 0, null, "v-k9");   // never applied
        late.headers().add("k", "k9".getBytes(StandardCharsets.UTF_8));
        producer.send(late).get();
        producer.send(new ProducerRecord<>(topic, 0, null, "keyless-8")).get();
        producer.send(new ProducerRecord<>(topic, 0, null, "keyless-9")).get();
      }
      // An operator moves the stored offset past offsets 7..9: they are never applied.
      assertEquals(0, Main.run(new String[] {"offsets", "reset", "--group", group, "--topic", topic, "--partition", "0",
          "--to", "10", "--jdbc-url", db.jdbcUrl(), "--jdbc-user", db.user(), "--jdbc-password", db.password()}));

      ReconciliationReport report = Reconciliation.of(broker.bootstrapServers(), topic, group, db)
          .inputKeys(VerifyCommand.keys("header:k")).appliedKeysFromJournal().run();
      System.out.println(report.render());
      assertEquals(10, report.total().records());
      assertEquals(9, report.total().expected(), "k1..k5, k9 and the keyless records by their offsets");
      assertEquals(6, report.total().applied());
      assertEquals(3, report.total().missing(), "k9 and the keyless records the reset skipped: " + report.sampleMissing());
      assertTrue(report.sampleMissing().contains("k9"), report.sampleMissing().toString());
      assertEquals(List.of("k1"), report.sampleDoubled());
      assertEquals(1, report.total().producerDuplicates());
      assertEquals(0, report.unexpectedEffects());

      int exit = Main.run(new String[] {"verify", "--bootstrap", broker.bootstrapServers(), "--topic", topic,
          "--group", group, "--jdbc-url", db.jdbcUrl(), "--jdbc-user", db.user(), "--jdbc-password", db.password(),
          "--business-key", "header:k"});
      assertEquals(1, exit, "verify exits 1 when anything is missing or doubled");
      assertEquals(2, Main.run(new String[] {"verify", "--bootstrap", broker.bootstrapServers(), "--topic", topic,
          "--group", group, "--jdbc-url", db.jdbcUrl(), "--business-key", "value"}), "a bad flag exits 2");
      // A business key no record carries: one line saying so, not a verdict calling every record missing.
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      PrintStream stderr = System.err;
      System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
      int noKeys;
      try {
        noKeys = Main.run(new String[] {"verify", "--bootstrap", broker.bootstrapServers(), "--topic", topic,
            "--group", group, "--jdbc-url", db.jdbcUrl(), "--jdbc-user", db.user(), "--jdbc-password", db.password(),
            "--business-key", "header:order-id"});
      } finally {
        System.setErr(stderr);
      }
      assertEquals(2, noKeys);   // the journal holds k1..k5 and k1 again: 6 keys
      assertEquals("fencepost verify: none of the 10 records of topic [" + topic + "] has a business key by "
          + "--business-key header:order-id, while the journal holds 6 business keys: the option does not say how "
          + "this pipeline's actors key records (header:NAME, record-key, json:/POINTER for a field of a JSON value, "
          + "class:NAME for anything else); nothing verified", err.toString(StandardCharsets.UTF_8).trim());
    } finally {
      Postgres.shared().dropDatabase(db);
    }
  }
}
