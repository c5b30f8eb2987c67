package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import com.typesafe.config.ConfigFactory;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Directories;
import io.fencepost.embedded.JvmProcess;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.pekko.actor.BootstrapSetup;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A rolling upgrade of an event class, as docs/evolving-events.md prescribes it, with two versions
 * running side by side in one consumer group and journal (separate JVMs, each with its own
 * version of the classes, compiled here from the sources below):
 * <ul>
 *   <li>version 1 writes {@code Reserved(orderId, sku, qty, reservedBefore)} and, through its
 *       migration ({@code currentVersion} 1, {@code supportedForwardVersion} 2), reads version 2;
 *   <li>version 2 renames {@code qty} to {@code quantity}, adds {@code warehouse}, and reads
 *       version 1 through its migration.
 * </ul>
 * Partitions move between the versions at every phase: version 1 alone, both, version 2 alone, then
 * version 1 alone again (a rollback). Each event records how many units of its SKU the partition had
 * reserved before it ({@code reservedBefore}, from the recovered state), so an incarnation that
 * misread an event of the other version shows in every later event of that SKU.
 */
@Tag("integration")
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class MixedVersionsIT {

  private static final int PARTITIONS = 4;
  private static final int PER_PHASE = 600;
  private static final String TOPIC = "orders";
  private static final String GROUP = "reservations";

  private static final String HANDLER = """
      package evolving;

      import io.fencepost.Effects;
      import io.fencepost.EvolvingNode.Stock;
      import io.fencepost.Inbound;
      import io.fencepost.PartitionActor;
      import io.fencepost.PartitionContext;

      public final class Reservations extends PartitionActor<String, Stock, Reserved> {
        public Reservations(PartitionContext context) {
          super(context);
        }

        @Override
        protected Stock emptyState() {
          return Stock.EMPTY;
        }

        @Override
        protected Effects<Reserved> onRecord(Stock stock, Inbound<String> in) {
          String[] f = in.value().split(",");
          return Effects.persist(%s);
        }

        @Override
        protected Stock applyEvent(Stock stock, Reserved e) {
          return stock.add(e.sku(), e.%s());
        }
      }
      """;

  private static final String MIGRATION = """
      package evolving;

      import com.fasterxml.jackson.databind.JsonNode;
      import com.fasterxml.jackson.databind.node.ObjectNode;
      import org.apache.pekko.serialization.jackson.JacksonMigration;

      public final class ReservedMigration extends JacksonMigration {
        @Override
        public int currentVersion() {
          return %d;
        }

        @Override
        public int supportedForwardVersion() {
          return 2;
        }

        @Override
        public JsonNode transform(int fromVersion, JsonNode json) {
          ObjectNode node = (ObjectNode) json;
          %s
          return node;
        }
      }
      """;

  /** Version 1: writes {@code qty}; reads version 2 by turning it back into version 1's shape. */
  private static final Map<String, String> VERSION_1 = Map.of(
      "Reserved", """
          package evolving;

          public record Reserved(String orderId, String sku, int qty, int reservedBefore)
              implements io.fencepost.JacksonSerializable {
          }
          """,
      "Reservations", HANDLER.formatted("new Reserved(f[0], f[1], Integer.parseInt(f[2]), stock.of(f[1]))", "qty"),
      "ReservedMigration", MIGRATION.formatted(1, """
          if (fromVersion == 2) {
              node.set("qty", node.remove("quantity"));
              node.remove("warehouse");
            }"""));

  /** Version 2: {@code qty} renamed {@code quantity}, {@code warehouse} added; reads version 1. */
  private static final Map<String, String> VERSION_2 = Map.of(
      "Reserved", """
          package evolving;

          public record Reserved(String orderId, String sku, int quantity, int reservedBefore, String warehouse)
              implements io.fencepost.JacksonSerializable {
          }
          """,
      "Reservations", HANDLER.formatted(
          "new Reserved(f[0], f[1], Integer.parseInt(f[2]), stock.of(f[1]), \"eu-1\")", "quantity"),
      "ReservedMigration", MIGRATION.formatted(2, """
          if (fromVersion < 2) {
              node.set("quantity", node.remove("qty"));
              node.put("warehouse", "main");
            }"""));

  private static final Pattern EVENT = Pattern.compile(
      "Reserved\\[orderId=o-(\\d+), sku=(sku-\\d), quantity=(\\d+), reservedBefore=(\\d+), warehouse=(\\S+)\\]");

  private final List<JvmProcess> processes = new ArrayList<>();

  @Test
  void partitionsMovingBetweenVersion1And2LoseAndDoubleNothingAndRecoverEachOthersEvents() throws Exception {
    Path work = Path.of("target", "mixed-versions");
    Directories.deleteRecursively(work);
    Path v1 = compile(VERSION_1, work.resolve("v1"));
    Path v2 = compile(VERSION_2, work.resolve("v2"));
    JournalDatabase db = Postgres.shared().createDatabase("mixed_versions_it");
    db.installSchema();
    try (KafkaBroker broker = KafkaBroker.create().start(); Admin admin = broker.admin()) {
      broker.createTopic(TOPIC, PARTITIONS);
      List<String> args = List.of(broker.bootstrapServers(), TOPIC, GROUP, db.jdbcUrl(), db.user(), db.password());

      // Phase 1: version 1 alone.
      JvmProcess old = node("v1-a", v1, args, work);
      produce(broker, 0, PER_PHASE);
      awaitCommitted(admin, PER_PHASE);

      // Phase 2: version 2 joins and takes partitions that version 1 wrote.
      JvmProcess upgraded = node("v2-a", v2, args, work);
      awaitPartitions(upgraded);
      produce(broker, PER_PHASE, 2 * PER_PHASE);
      awaitCommitted(admin, 2 * PER_PHASE);

      // Phase 3: version 1 stops; version 2 holds every partition.
      old.terminate(Duration.ofSeconds(60));
      produce(broker, 2 * PER_PHASE, 3 * PER_PHASE);
      awaitCommitted(admin, 3 * PER_PHASE);

      // Phase 4: a rollback: version 1 starts again and version 2 stops.
      JvmProcess rolledBack = node("v1-b", v1, args, work);
      awaitPartitions(rolledBack);
      upgraded.terminate(Duration.ofSeconds(60));
      produce(broker, 3 * PER_PHASE, 4 * PER_PHASE);
      awaitCommitted(admin, 4 * PER_PHASE);
      rolledBack.terminate(Duration.ofSeconds(60));
      for (JvmProcess p : processes) {
        assertEquals(0, p.countLines(" ERROR "), p.log() + " has ERROR lines");
      }

      Map<Integer, List<String>> events = journal(db, v2);
      Set<Integer> orders = new TreeSet<>();
      Map<String, Integer> warehouses = new TreeMap<>();
      for (Map.Entry<Integer, List<String>> partition : events.entrySet()) {
        Map<String, Integer> reserved = new TreeMap<>();
        for (String event : partition.getValue()) {
          Matcher m = EVENT.matcher(event);
          assertTrue(m.matches(), "an event of partition " + partition.getKey() + " read as " + event);
          int order = Integer.parseInt(m.group(1));
          assertTrue(orders.add(order), "order " + order + " applied twice");
          assertEquals(order % PARTITIONS, partition.getKey(), "order " + order + "'s partition");
          assertEquals(order % 5, Integer.parseInt(m.group(2).substring(4)), "order " + order + "'s sku");
          assertEquals(quantity(order), Integer.parseInt(m.group(3)), "order " + order + "'s quantity");
          assertEquals(reserved.getOrDefault(m.group(2), 0), Integer.parseInt(m.group(4)),
              "units of " + m.group(2) + " reserved before order " + order + ", as the state it was applied to held");
          reserved.merge(m.group(2), quantity(order), Integer::sum);
          String phase = order < PER_PHASE ? "1" : order < 2 * PER_PHASE ? "2" : order < 3 * PER_PHASE ? "3" : "4";
          warehouses.merge(phase + ":" + m.group(5), 1, Integer::sum);
        }
      }
      assertEquals(4 * PER_PHASE, orders.size(), "orders applied");
      // "main": written by version 1 (read through version 2's migration); "eu-1": written by version 2.
      assertEquals(PER_PHASE, warehouses.get("1:main"), "phase 1 by version 1: " + warehouses);
      assertTrue(warehouses.getOrDefault("2:main", 0) > 0 && warehouses.getOrDefault("2:eu-1", 0) > 0,
          "phase 2 by both versions: " + warehouses);
      assertEquals(PER_PHASE, warehouses.get("3:eu-1"), "phase 3 by version 2: " + warehouses);
      assertEquals(PER_PHASE, warehouses.get("4:main"), "phase 4 by version 1 again: " + warehouses);
    } finally {
      processes.forEach(JvmProcess::close);
      Postgres.shared().dropDatabase(db);
    }
  }

  private static int quantity(int order) {
    return 1 + order % 3;
  }

  private JvmProcess node(String name, Path classes, List<String> args, Path work) {
    JvmProcess p = JvmProcess.start(name, List.of(), List.of(classes), EvolvingNode.class.getName(), args,
        work.resolve(name + ".log"));
    processes.add(p);
    p.awaitLine("READY", Duration.ofSeconds(90));
    return p;
  }

  /** Waits until {@code node} has started the stream of at least one partition. */
  private static void awaitPartitions(JvmProcess node) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
    while (node.countLines("seeking to stored offsets {" + TOPIC + "-") == 0) {
      assertTrue(System.nanoTime() < deadline, "no partition assigned to the new node within 90 s; see " + node.log());
      Thread.sleep(100);
    }
  }

  /** Orders {@code from} (inclusive) to {@code to}: "o-i,sku-(i%5),quantity" to partition i % 4. */
  private static void produce(KafkaBroker broker, int from, int to) throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(),
        new StringSerializer())) {
      for (int i = from; i < to; i++) {
        producer.send(new ProducerRecord<>(TOPIC, i % PARTITIONS, null, "o-" + i + ",sku-" + i % 5 + "," + quantity(i)));
      }
      producer.flush();
    }
  }

  /** Waits until the group's committed offsets add up to {@code records} (every record's write done). */
  private static void awaitCommitted(Admin admin, long records) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    long committed = 0;
    while (System.nanoTime() < deadline) {
      Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(GROUP)
          .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
      committed = offsets.values().stream().filter(o -> o != null).mapToLong(OffsetAndMetadata::offset).sum();
      if (committed >= records) {
        assertEquals(records, committed, "committed offsets");
        return;
      }
      Thread.sleep(200);
    }
    throw new AssertionError("committed offsets reached " + committed + " of " + records + " within 2 minutes");
  }

  /** Writes {@code sources} (class name to text) under {@code dir} and compiles them; returns the classes. */
  private static Path compile(Map<String, String> sources, Path dir) throws IOException {
    Path src = Files.createDirectories(dir.resolve("src/evolving"));
    Path classes = Files.createDirectories(dir.resolve("classes"));
    List<String> options = new ArrayList<>(List.of("--release", "17", "-d", classes.toString(), "-classpath",
        System.getProperty("java.class.path")));
    for (Map.Entry<String, String> s : sources.entrySet()) {
      options.add(Files.writeString(src.resolve(s.getKey() + ".java"), s.getValue()).toString());
    }
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    int status = javac.run(null, null, null, options.toArray(String[]::new));
    assertEquals(0, status, "javac of " + src);
    return classes;
  }

  /** Every partition's events, in journal order, as version 2 reads them (its record's toString). */
  private static Map<Integer, List<String>> journal(JournalDatabase db, Path version2) throws Exception {
    Map<Integer, List<String>> out = new TreeMap<>();
    try (URLClassLoader loader = new URLClassLoader(new URL[] {version2.toUri().toURL()},
        MixedVersionsIT.class.getClassLoader())) {
      ActorSystem<Void> reader = ActorSystem.create(Behaviors.empty(), "mixed-versions-reader", BootstrapSetup.create(
          ConfigFactory.parseString("pekko.serialization.jackson.migrations { \"evolving.Reserved\" = "
              + "\"evolving.ReservedMigration\" }").withFallback(db.pekkoConfig()).withFallback(ConfigFactory.load()))
          .withClassloader(loader));
      try {
        JdbcReadJournal journal = PersistenceQuery.get(reader)
            .getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier());
        for (int p = 0; p < PARTITIONS; p++) {
          List<String> events = new ArrayList<>();
          journal.currentEventsByPersistenceId(new PartitionId(GROUP, TOPIC, p).persistenceId(), 0, Long.MAX_VALUE)
              .runForeach(env -> AppliedBatch.from(env.event()).ifPresent(b -> b.events().forEach(e -> events.add(
                  e.toString()))), reader).toCompletableFuture().get(60, TimeUnit.SECONDS);
          out.put(p, events);
        }
      } finally {
        reader.terminate();
        reader.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }
}
