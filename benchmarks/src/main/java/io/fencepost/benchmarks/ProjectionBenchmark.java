package io.fencepost.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.BatchOutcome;
import io.fencepost.Inbound;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionActorSettings;
import io.fencepost.PartitionCommand;
import io.fencepost.PartitionId;
import io.fencepost.examples.LedgerActor;
import io.fencepost.examples.LedgerBalances;
import io.fencepost.examples.Payment;
import io.fencepost.jdbc.JdbcProjection;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Postgres;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The read model's maximum rate on this machine: {@code partitions} ledger journals of
 * {@code entries} batches of {@code perBatch} payments each are written first, then projected to
 * completion, once with the ledger's SQL handler ({@link LedgerBalances}) and once with a handler
 * that does nothing (the framework's own cost: journal reads, transactions, positions). Journal on
 * PostgreSQL (embedded, or FENCEPOST_PG_URL).
 *
 * <p>Run: {@code java -cp "target/classes:$(cat /tmp/bench.cp)" io.fencepost.benchmarks.ProjectionBenchmark
 * [partitions] [entries] [perBatch]} from {@code benchmarks/} (see benchmarks/results/README.md).
 */
public final class ProjectionBenchmark {

  private ProjectionBenchmark() {
  }

  public static void main(String[] args) throws Exception {
    int partitions = args.length > 0 ? Integer.parseInt(args[0]) : 12;
    int entries = args.length > 1 ? Integer.parseInt(args[1]) : 2_000;
    int perBatch = args.length > 2 ? Integer.parseInt(args[2]) : 5;
    JournalDatabase db = Postgres.shared().createDatabase("projection_bench");
    db.installSchema();
    LedgerBalances.installSchema(db);
    Config config = db.pekkoConfig().withFallback(ConfigFactory.load());
    ActorTestKit kit = ActorTestKit.create("projection-bench", config);
    try {
      String group = "bench";
      String topic = "payments";
      write(kit, group, topic, partitions, entries, perBatch);
      for (int round = 1; round <= 2; round++) {
        measure(kit, db, "ledger SQL handler", LedgerBalances.projection(kit.system(), db, group, topic),
            partitions, entries, perBatch);
        try (var c = db.connect(); var st = c.createStatement()) {
          st.execute("DELETE FROM fencepost_projection_offsets");
          st.execute("DELETE FROM ledger_balances");
        }
        measure(kit, db, "empty handler", JdbcProjection.forTopics(kit.system(), "empty", db, group, List.of(topic),
            (tx, batch) -> { }).installSchema(), partitions, entries, perBatch);
        try (var c = db.connect(); var st = c.createStatement()) {
          st.execute("DELETE FROM fencepost_projection_offsets");
        }
      }
    } finally {
      kit.shutdownTestKit();
      Postgres.shared().dropDatabase(db);
      Postgres.shared().close();
    }
  }

  private static void write(ActorTestKit kit, String group, String topic, int partitions, int entries, int perBatch) {
    long start = System.nanoTime();
    List<ActorRef<PartitionCommand>> actors = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      actors.add(kit.spawn(PartitionActor.behavior(new PartitionId(group, topic, p),
          PartitionActorSettings.create(kit.system()), LedgerActor::new)));
    }
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    for (int e = 0; e < entries; e++) {
      for (int p = 0; p < partitions; p++) {
        PartitionId id = new PartitionId(group, topic, p);
        List<Inbound<?>> in = new ArrayList<>(perBatch);
        for (int i = 0; i < perBatch; i++) {
          long offset = (long) e * perBatch + i;
          in.add(Inbound.of(id, offset, new Payment("p" + p + "-" + offset, "m" + (offset % 97), 100)));
        }
        actors.get(p).tell(new PartitionCommand.ApplyBatch(in, probe.ref()));
      }
      for (int p = 0; p < partitions; p++) {
        if (!(probe.expectMessageClass(BatchOutcome.class, Duration.ofSeconds(60)) instanceof BatchOutcome.Applied)) {
          throw new IllegalStateException("a batch was not applied");
        }
      }
    }
    System.out.printf("wrote %,d journal entries of %d payments in %.1f s%n", partitions * entries, perBatch,
        (System.nanoTime() - start) / 1e9);
  }

  private static void measure(ActorTestKit kit, JournalDatabase db, String what, JdbcProjection projection,
      int partitions, int entries, int perBatch) {
    long start = System.nanoTime();
    long applied = 0;
    int n;
    while ((n = projection.runOnce()) > 0) {
      applied += n;
    }
    double s = (System.nanoTime() - start) / 1e9;
    projection.close();
    if (applied != (long) partitions * entries) {
      throw new IllegalStateException(what + ": applied " + applied + " entries, expected " + partitions * entries);
    }
    System.out.printf("%-20s %,d entries (%,d events) in %.2f s: %,.0f entries/s, %,.0f events/s%n", what, applied,
        applied * perBatch, s, applied / s, applied * perBatch / s);
  }
}
