package io.fencepost.benchmarks;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.fencepost.jdbc.JournalDatabase;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The naive inbox on PostgreSQL: per record, insert its business key into an inbox table
 * (primary key) and, if new, upsert the merchant's balance, in one transaction per record or per
 * {@code perTransaction} records; the processed records' offsets are committed to Kafka after each
 * poll's transactions.
 * Exactly-once by the inbox's primary key. Latency ends when the record's transaction commits.
 */
final class NaiveInboxPeer implements Peer {

  private final int perTransaction;
  private final int maxRecords;

  /**
   * @param perTransaction records per database transaction
   * @param maxRecords the most records one run applies (the inbox is too slow for the whole topic)
   */
  NaiveInboxPeer(int perTransaction, int maxRecords) {
    this.perTransaction = perTransaction;
    this.maxRecords = maxRecords;
  }

  @Override
  public String name() {
    return "naive-inbox-" + perTransaction;
  }

  @Override
  public String description() {
    return "naive inbox on PostgreSQL, " + (perTransaction == 1 ? "1 record" : perTransaction + " records")
        + " per transaction";
  }

  @Override
  public Promise promise() {
    return Promise.EXACTLY_ONCE;
  }

  @Override
  public int records(Workload workload) {
    return Math.min(workload.records(), maxRecords);
  }

  @Override
  public Outcome run(Run run) throws Exception {
    JournalDatabase db = run.infra().newDatabase("bench_inbox");
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE inbox (message_key text PRIMARY KEY, received_at timestamptz NOT NULL DEFAULT now())");
      st.execute("CREATE TABLE balances (merchant text PRIMARY KEY, payments bigint NOT NULL, cents bigint NOT NULL)");
    }
    DbUsage before = DbUsage.sample(db);
    Heap.resetPeak();
    int records = records(run.workload());
    Latency.Recorder latency = run.latency() ? run.probe().recorder() : null;
    Progress progress = new Progress();
    BitSet seen = new BitSet();
    long seenCents = 0;
    long deadline = System.nanoTime() + Consumers.RUN_TIMEOUT.toNanos();
    try (Connection conn = db.connect();
        KafkaConsumer<String, String> consumer = Consumers.create(run.infra().bootstrapServers(),
            run.infra().uniqueName("bench-inbox"))) {
      conn.setAutoCommit(false);
      Transactions tx = new Transactions(conn, latency);
      consumer.subscribe(List.of(run.topic()));
      boolean ready = false;
      int consumed = 0;
      Map<TopicPartition, OffsetAndMetadata> processed = new HashMap<>();
      while (consumed < records && System.nanoTime() < deadline) {
        var polled = consumer.poll(Duration.ofMillis(100));
        if (!ready && consumer.assignment().size() == run.partitions()) {
          ready = true;
          progress.started();
          run.ready();
        }
        for (ConsumerRecord<String, String> r : polled) {
          if (consumed == records) {
            break;
          }
          progress.started();
          Payment p = Payment.parse(r.value());
          consumed++;
          if (!seen.get(p.id())) {
            seen.set(p.id());
            seenCents += p.cents();
          }
          tx.apply(p, r.timestamp());
          if (tx.size() == perTransaction) {
            tx.commit();
          }
          processed.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
        }
        tx.commit();
        if (!processed.isEmpty()) {
          consumer.commitSync(processed);
          processed.clear();
        }
      }
      progress.finished();
    }
    long peak = Heap.peakMib();
    DbUsage usage = DbUsage.settled(db).minus(before);
    return check(db, records, seen.cardinality(), seenCents, progress.seconds(), peak, usage,
        latency == null ? null : run.probe().steady());
  }

  /** Compares the inbox and the balances with what was consumed. */
  private static Outcome check(JournalDatabase db, int records, int distinct, long cents, double seconds, long peak,
      DbUsage usage, Latency latency) throws SQLException {
    try (Connection c = db.connect(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT (SELECT count(*) FROM inbox), coalesce(sum(payments), 0), "
            + "coalesce(sum(cents), 0) FROM balances")) {
      rs.next();
      long keys = rs.getLong(1);
      long credited = rs.getLong(2);
      if (rs.getLong(3) != cents && credited == keys) {
        throw new IllegalStateException("balances sum to " + rs.getLong(3) + " cents, consumed " + cents);
      }
      return new Outcome(records, credited, credited - keys, distinct - keys, seconds, peak, usage,
          latency, "inbox keys and balances in the database");
    }
  }

  /** The open transaction: its statements and the timestamps of its records. */
  private static final class Transactions {
    private final Connection conn;
    private final PreparedStatement insert;
    private final PreparedStatement credit;
    private final Latency.Recorder latency;
    private long[] timestamps = new long[16];
    private int size;

    Transactions(Connection conn, Latency.Recorder latency) throws SQLException {
      this.conn = conn;
      this.latency = latency;
      insert = conn.prepareStatement("INSERT INTO inbox (message_key) VALUES (?) ON CONFLICT DO NOTHING");
      credit = conn.prepareStatement("INSERT INTO balances (merchant, payments, cents) VALUES (?, 1, ?) "
          + "ON CONFLICT (merchant) DO UPDATE SET payments = balances.payments + 1, "
          + "cents = balances.cents + EXCLUDED.cents");
    }

    void apply(Payment p, long timestamp) throws SQLException {
      insert.setString(1, p.businessKey());
      if (insert.executeUpdate() == 1) {
        credit.setString(1, p.merchant());
        credit.setLong(2, p.cents());
        credit.executeUpdate();
      }
      if (size == timestamps.length) {
        timestamps = Arrays.copyOf(timestamps, size * 2);
      }
      timestamps[size++] = timestamp;
    }

    int size() {
      return size;
    }

    void commit() throws SQLException {
      if (size == 0) {
        return;
      }
      conn.commit();
      if (latency != null) {
        for (int i = 0; i < size; i++) {
          latency.done(timestamps[i]);
        }
      }
      size = 0;
    }
  }
}
