package io.fencepost.benchmarks;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.DeliveryMode;
import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.JacksonSerializable;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.testkit.ClusterNodes;
import io.fencepost.testkit.KafkaBroker;
import io.fencepost.testkit.Postgres;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The same workload, in one invocation on the same broker, topic and database, through: a raw
 * KafkaConsumer (in-memory effect, at-least-once, the upper bound); the seeds' naive inbox on
 * PostgreSQL (one transaction per message, and 100 per transaction); and Fencepost's pipeline in
 * each delivery mode (journal on PostgreSQL). Reports records/s, ratios, journal rows per record and
 * checks each mode's counts.
 *
 * <p>Run: {@code java -cp ... io.fencepost.benchmarks.SideBySide [records] [partitions] [inbox-records]}.
 */
public final class SideBySide {

  private static final String GROUP_PREFIX = "bench-";

  /** A payment as the benchmark's handlers see it (CSV: id,merchant,cents). */
  public record Pay(String id, String merchant, long cents) implements JacksonSerializable {
  }

  /** The credit a Fencepost handler journals. */
  public record Credit(String merchant, long cents) implements JacksonSerializable {
  }

  /** Counts and sums; immutable. */
  public record Total(long count, long cents) implements JacksonSerializable {
  }

  static final class PayDeserializer implements Deserializer<Pay> {
    @Override
    public Pay deserialize(String topic, byte[] data) {
      String[] f = new String(data, StandardCharsets.UTF_8).split(",");
      return new Pay(f[0], f[1], Long.parseLong(f[2]));
    }
  }

  /** The Fencepost handler: one credit per payment. */
  public static final class Crediting extends PartitionActor<Pay, Total, Credit> {
    public Crediting(PartitionContext context) {
      super(context);
    }

    @Override
    protected Total emptyState() {
      return new Total(0, 0);
    }

    @Override
    protected Effects<Credit> onRecord(Total total, Inbound<Pay> in) {
      return Effects.persist(new Credit(in.value().merchant(), in.value().cents()));
    }

    @Override
    protected Total applyEvent(Total total, Credit c) {
      return new Total(total.count() + 1, total.cents() + c.cents());
    }

    @Override
    protected Optional<String> businessKey(Inbound<Pay> in) {
      return Optional.of(in.value().id());
    }
  }

  record Row(String mode, long records, double seconds, long peakHeapMb, String dbWork, String check) {
    double rate() {
      return records / seconds;
    }
  }

  private SideBySide() {
  }

  public static void main(String[] args) throws Exception {
    int records = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
    int partitions = args.length > 1 ? Integer.parseInt(args[1]) : 16;
    int inboxRecords = args.length > 2 ? Integer.parseInt(args[2]) : 20_000;
    List<Row> rows = new ArrayList<>();
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      String topic = "bench-payments";
      broker.createTopic(topic, partitions);
      produce(broker, topic, partitions, records);
      System.out.printf("produced %,d records (~150 bytes) to %d partitions%n", records, partitions);

      rows.add(raw(broker, topic, records));
      JournalDatabase inboxDb = Postgres.shared().createDatabase("bench_inbox");
      rows.add(inbox(broker, topic, inboxRecords, inboxDb, 1));
      rows.add(inbox(broker, topic, Math.min(records, inboxRecords * 5), inboxDb, 100));
      for (DeliveryMode mode : DeliveryMode.values()) {
        JournalDatabase db = Postgres.shared().createDatabase("bench_" + mode.name().toLowerCase(Locale.ROOT));
        db.installSchema();
        rows.add(fencepost(broker, topic, records, db, mode));
      }
    } finally {
      Postgres.shared().close();
    }
    String table = table(rows, records, partitions);
    System.out.println(table);
    Path out = Path.of("results", "side-by-side.md");
    Files.createDirectories(out.getParent());
    Files.writeString(out, table);
    System.out.println("written to " + out.toAbsolutePath());
  }

  private static void produce(KafkaBroker broker, String topic, int partitions, int records) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    p.put(ProducerConfig.LINGER_MS_CONFIG, "10");
    p.put(ProducerConfig.BATCH_SIZE_CONFIG, "131072");
    String pad = "x".repeat(110);
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      for (int i = 0; i < records; i++) {
        String merchant = "merchant-" + (i % 1000);
        producer.send(new ProducerRecord<>(topic, i % partitions, merchant,
            "pay-" + i + "," + merchant + "," + (100 + i % 900) + "," + pad));
      }
      producer.flush();
    }
  }

  private static long peakHeapMb() {
    long peak = 0;
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP && pool.getPeakUsage() != null) {
        peak += pool.getPeakUsage().getUsed();
      }
    }
    return peak / (1024 * 1024);
  }

  private static void resetPeaks() {
    System.gc();
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      pool.resetPeakUsage();
    }
  }

  private static Properties consumerProps(KafkaBroker broker, String group) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "2000");
    return p;
  }

  /** A plain KafkaConsumer crediting an in-memory map, committing after each poll: the upper bound. */
  private static Row raw(KafkaBroker broker, String topic, int records) {
    resetPeaks();
    Map<String, Long> balances = new HashMap<>();
    long seen = 0;
    long start = System.nanoTime();
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(broker, GROUP_PREFIX + "raw"),
        new StringDeserializer(), new StringDeserializer())) {
      c.subscribe(List.of(topic));
      while (seen < records) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
          String[] f = r.value().split(",");
          balances.merge(f[1], Long.parseLong(f[2]), Long::sum);
          seen++;
        }
        c.commitSync();
      }
    }
    double s = (System.nanoTime() - start) / 1e9;
    return new Row("raw KafkaConsumer (in memory, at-least-once, no durability)", seen, s, peakHeapMb(), "none",
        seen == records ? "count ok" : "count " + seen);
  }

  /** The seeds' inbox: per message (or per 100) a transaction inserting the key and updating a balance. */
  private static Row inbox(KafkaBroker broker, String topic, int records, JournalDatabase db, int perTx)
      throws Exception {
    resetPeaks();
    try (Connection conn = db.connect(); Statement st = conn.createStatement()) {
      st.execute("CREATE TABLE IF NOT EXISTS inbox_" + perTx + " (message_key text PRIMARY KEY, "
          + "received_at timestamptz NOT NULL DEFAULT now())");
      st.execute("CREATE TABLE IF NOT EXISTS balances_" + perTx + " (merchant text PRIMARY KEY, cents bigint NOT NULL)");
    }
    long applied = 0;
    long start = System.nanoTime();
    try (Connection conn = db.connect();
        KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(broker, GROUP_PREFIX + "inbox" + perTx),
            new StringDeserializer(), new StringDeserializer())) {
      conn.setAutoCommit(false);
      PreparedStatement insert = conn.prepareStatement("INSERT INTO inbox_" + perTx
          + " (message_key) VALUES (?) ON CONFLICT DO NOTHING");
      PreparedStatement update = conn.prepareStatement("INSERT INTO balances_" + perTx
          + " (merchant, cents) VALUES (?, ?) ON CONFLICT (merchant) DO UPDATE SET cents = balances_" + perTx
          + ".cents + EXCLUDED.cents");
      c.subscribe(List.of(topic));
      int inTx = 0;
      long seen = 0;
      while (seen < records) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
          if (seen >= records) {
            break;
          }
          seen++;
          String[] f = r.value().split(",");
          insert.setString(1, f[0]);
          if (insert.executeUpdate() == 1) {
            update.setString(1, f[1]);
            update.setLong(2, Long.parseLong(f[2]));
            update.executeUpdate();
            applied++;
          }
          if (++inTx == perTx) {
            conn.commit();
            inTx = 0;
          }
        }
        conn.commit();
        inTx = 0;
        c.commitSync();
      }
    }
    double s = (System.nanoTime() - start) / 1e9;
    return new Row("naive inbox, " + (perTx == 1 ? "1 message" : perTx + " messages") + " per transaction", applied,
        s, peakHeapMb(), "2 rows per record", applied == records ? "count ok" : "count " + applied);
  }

  /** Fencepost's pipeline on one cluster node, journal on PostgreSQL. */
  private static Row fencepost(KafkaBroker broker, String topic, int records, JournalDatabase db, DeliveryMode mode)
      throws Exception {
    resetPeaks();
    String name = "bench-" + mode.configValue();
    Config config = ClusterNodes.node(name, 0, List.of()).withFallback(db.pekkoConfig())
        .withFallback(ConfigFactory.parseString("pekko.loglevel = WARNING")).withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), name, config);
    try {
      ClusterNodes.joinSelf(system, Duration.ofSeconds(30));
      PipelineSettings base = PipelineSettings.create(system, "bench").withBootstrapServers(broker.bootstrapServers())
          .withTopics(List.of(topic)).withGroupId(GROUP_PREFIX + mode.configValue()).withBatch(1000, Duration.ofMillis(20));
      PipelineSettings settings = base.withPartitionActor(base.partitionActor().withDeliveryMode(mode));
      long start = System.nanoTime();
      Pipeline pipeline = KafkaPipeline.create(system, Crediting::new, new PayDeserializer(), settings).start();
      long applied = 0;
      long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
      while (applied < records && System.nanoTime() < deadline) {
        Thread.sleep(100);
        applied = 0;
        for (PartitionView v : pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS)) {
          applied += v.nextOffset().orElse(0);
        }
      }
      double s = (System.nanoTime() - start) / 1e9;
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      long rows;
      try (Connection c = db.connect(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT count(*) FROM event_journal")) {
        rs.next();
        rows = rs.getLong(1);
      }
      return new Row("Fencepost " + mode.configValue() + " (journal on PostgreSQL)", applied, s, peakHeapMb(),
          String.format(Locale.ROOT, "%,d journal rows (1 per %.0f records)", rows, applied / (double) Math.max(1, rows)),
          applied == records ? "offsets ok" : "applied " + applied);
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  private static String table(List<Row> rows, int records, int partitions) {
    double raw = rows.get(0).rate();
    double inbox = rows.get(1).rate();
    StringBuilder sb = new StringBuilder();
    sb.append(String.format(Locale.ROOT, "Side by side, one run: %,d records of ~150 bytes, %d partitions, "
        + "single node, in-process KRaft broker, embedded PostgreSQL 14 (fsync on), %s, %d cores.%n%n",
        records, partitions, System.getProperty("java.vm.name") + " " + System.getProperty("java.version"),
        Runtime.getRuntime().availableProcessors()));
    sb.append("| mode | records | seconds | records/s | vs raw | vs naive inbox | peak heap MiB | database work | check |\n");
    sb.append("|---|---:|---:|---:|---:|---:|---:|---|---|\n");
    for (Row r : rows) {
      sb.append(String.format(Locale.ROOT, "| %s | %,d | %.1f | %,.0f | %.2f | %.1f | %d | %s | %s |%n", r.mode(),
          r.records(), r.seconds(), r.rate(), r.rate() / raw, r.rate() / inbox, r.peakHeapMb(), r.dbWork(), r.check()));
    }
    return sb.toString();
  }
}
