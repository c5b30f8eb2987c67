package io.fencepost.benchmarks;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.BatchOutcome;
import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionActorSettings;
import io.fencepost.PartitionCommand;
import io.fencepost.PartitionContext;
import io.fencepost.PartitionId;
import io.fencepost.PartitionStatus;
import io.fencepost.internal.WindowSegment;
import io.fencepost.jdbc.JournalCompaction;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Postgres;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * How long a partition with a million applied records and a million-key window takes to recover,
 * and how much heap its window costs per key. Journal on PostgreSQL (embedded, or FENCEPOST_PG_URL).
 *
 * <p>Run: {@code java -cp benchmarks/target/... io.fencepost.benchmarks.RecoveryBenchmark [records] [batch]}
 * (see benchmarks/results/README.md for the exact command).
 */
public final class RecoveryBenchmark {

  /** Counts records; its events are the offsets (Longs, Pekko's built-in serializer). */
  static final class Counter extends PartitionActor<String, Long, Long> {
    Counter(PartitionContext context) {
      super(context);
    }

    @Override
    protected Long emptyState() {
      return 0L;
    }

    @Override
    protected Effects<Long> onRecord(Long count, Inbound<String> in) {
      return Effects.persist(in.offset());
    }

    @Override
    protected Long applyEvent(Long count, Long offset) {
      return count + 1;
    }

    @Override
    protected Optional<String> businessKey(Inbound<String> in) {
      return Optional.of(in.value());
    }
  }

  /** Snapshots taken while the records are written. */
  static final int SNAPSHOTS = 20;

  private RecoveryBenchmark() {
  }

  public static void main(String[] args) throws Exception {
    int records = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    int batch = args.length > 1 ? Integer.parseInt(args[1]) : 1000;
    JournalDatabase db = Postgres.shared().createDatabase("recovery_bench");
    db.installSchema();
    Config config = db.pekkoConfig().withFallback(ConfigFactory.load());
    try {
      for (boolean snapshots : new boolean[] {true, false}) {
        PartitionId id = new PartitionId("bench", snapshots ? "with-snapshot" : "events-only", 0);
        // Snapshots while the window fills (each 50,000 keys after the one before at the defaults), the
        // last one at the last write: recovery reads it and no entry after it.
        int snapshotEvery = snapshots ? Math.max(1, records / batch / SNAPSHOTS) : Integer.MAX_VALUE;
        write(config, db, id, records, batch, snapshotEvery);
        if (snapshots) {
          snapshotBytes(db, id, (records + batch - 1) / batch);
        }
        for (int round = 1; round <= 3; round++) {
          recover(config, id, records, snapshotEvery, round);
        }
      }
    } finally {
      Postgres.shared().dropDatabase(db);
      Postgres.shared().close();
    }
  }

  private static PartitionActorSettings settings(ActorTestKit kit, int maxKeys, int snapshotEvery) {
    return PartitionActorSettings.create(kit.system())
        .withKeyWindow(true, maxKeys, Duration.ofDays(7))
        .withSnapshotEvery(snapshotEvery);
  }

  private static void write(Config config, JournalDatabase db, PartitionId id, int records, int batch,
      int snapshotEvery) throws Exception {
    ActorTestKit kit = ActorTestKit.create("writer", config);
    try {
      ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(id, settings(kit, records, snapshotEvery),
          Counter::new));
      TestProbe<BatchOutcome> probe = kit.createTestProbe();
      long start = System.nanoTime();
      for (int from = 0; from < records; from += batch) {
        List<Inbound<?>> in = new ArrayList<>(batch);
        for (int o = from; o < Math.min(records, from + batch); o++) {
          in.add(Inbound.of(id, o, "key-" + o));
        }
        actor.tell(new PartitionCommand.ApplyBatch(in, probe.ref()));
        BatchOutcome out = probe.expectMessageClass(BatchOutcome.class, Duration.ofSeconds(60));
        if (!(out instanceof BatchOutcome.Applied)) {
          throw new IllegalStateException("batch at " + from + " failed: " + out);
        }
      }
      double s = (System.nanoTime() - start) / 1e9;
      if (snapshotEvery != Integer.MAX_VALUE) {
        // Snapshots are stored beside the command path: the last one may still be on its way.
        awaitSnapshot(db, id, (records + batch - 1) / batch);
      }
      System.out.printf("[%s] wrote %,d records in %,d batches in %.1f s (%,.0f records/s, one partition, direct to "
          + "the actor)%n", id.topic(), records, (records + batch - 1) / batch, s, records / s);
    } finally {
      kit.shutdownTestKit();
    }
  }

  /** What the snapshot after write {@code sequenceNr} wrote: its row and the segment rows cut then. */
  private static void snapshotBytes(JournalDatabase db, PartitionId id, long sequenceNr) throws Exception {
    long main = 0;
    long segments = 0;
    int cut = 0;
    long referenced = 0;
    try (Connection c = db.connect();
         PreparedStatement st = c.prepareStatement("SELECT persistence_id, sequence_number, "
             + "length(snapshot_payload) FROM snapshot WHERE persistence_id IN (?, ?)")) {
      st.setString(1, id.persistenceId());
      st.setString(2, WindowSegment.persistenceIdOf(id.persistenceId()));
      ResultSet rs = st.executeQuery();
      while (rs.next()) {
        long bytes = rs.getLong(3);
        if (rs.getString(1).equals(id.persistenceId())) {
          if (rs.getLong(2) == sequenceNr) {
            main = bytes;
          }
        } else {
          referenced += bytes;
          if (WindowSegment.journalSequenceNr(rs.getLong(2)) == sequenceNr) {
            segments += bytes;
            cut++;
          }
        }
      }
    }
    System.out.printf("[%s] the snapshot at %d wrote %,d bytes: its row %,d + %d new key window segments %,d "
        + "(segment rows stored: %,d bytes in all)%n", id.topic(), sequenceNr, main + segments, main, cut, segments,
        referenced);
  }

  private static void awaitSnapshot(JournalDatabase db, PartitionId id, long sequenceNr) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    while (JournalCompaction.newestSnapshot(db, id.persistenceId()) < sequenceNr) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the snapshot at " + sequenceNr + " was not stored within 2 minutes");
      }
      Thread.sleep(50);
    }
  }

  private static void recover(Config config, PartitionId id, int records, int snapshotEvery, int round) {
    ActorTestKit kit = ActorTestKit.create("reader", config);
    try {
      Runtime rt = Runtime.getRuntime();
      System.gc();
      long before = rt.totalMemory() - rt.freeMemory();
      long start = System.nanoTime();
      ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(id, settings(kit, records, snapshotEvery),
          Counter::new));
      // Ready once it answers a batch (a redelivery of the last record: acknowledged, nothing written),
      // which waits for the key window's segments to be read.
      TestProbe<BatchOutcome> ready = kit.createTestProbe();
      actor.tell(new PartitionCommand.ApplyBatch(List.of(Inbound.of(id, records - 1, "key-" + (records - 1))),
          ready.ref()));
      ready.expectMessageClass(BatchOutcome.Applied.class, Duration.ofMinutes(5));
      TestProbe<PartitionStatus> probe = kit.createTestProbe();
      actor.tell(new PartitionCommand.GetStatus(probe.ref()));
      PartitionStatus status = probe.expectMessageClass(PartitionStatus.class, Duration.ofMinutes(5));
      double ms = (System.nanoTime() - start) / 1e6;
      System.gc();
      long after = rt.totalMemory() - rt.freeMemory();
      System.out.printf("[%s] round %d: recovered next offset %,d with %,d window keys and answered a batch in %.0f ms; heap +%,d bytes "
          + "(%.1f bytes per key)%n", id.topic(), round, status.nextOffset().orElse(-1), status.windowKeys(), ms,
          after - before, (after - before) / (double) Math.max(1, status.windowKeys()));
    } finally {
      kit.shutdownTestKit();
    }
  }
}
