package io.fencepost.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import com.typesafe.config.ConfigFactory;
import io.fencepost.AppliedBatch;
import io.fencepost.BatchOutcome;
import io.fencepost.DeliveryMode;
import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionActorSettings;
import io.fencepost.PartitionCommand;
import io.fencepost.PartitionContext;
import io.fencepost.PartitionId;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Postgres;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The at-most-once and at-least-once examples behave under failure exactly as their docs say. */
@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class DeliveryModeExamplesIT {

  private static JournalDatabase db;
  private static ActorTestKit kit;

  @BeforeAll
  static void start() {
    db = Postgres.shared().createDatabase("delivery_modes");
    db.installSchema();
    kit = ActorTestKit.create("modes", db.pekkoConfig().withFallback(ConfigFactory.load()));
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
    Postgres.shared().dropDatabase(db);
  }

  private static BatchOutcome apply(ActorRef<PartitionCommand> actor, List<Inbound<?>> records) {
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.ApplyBatch(records, probe.ref()));
    return probe.expectMessageClass(BatchOutcome.class, Duration.ofSeconds(30));
  }

  private static List<Object> events(PartitionId id) throws Exception {
    JdbcReadJournal journal = PersistenceQuery.get(kit.system())
        .getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier());
    List<Object> out = new ArrayList<>();
    journal.currentEventsByPersistenceId(id.persistenceId(), 0, Long.MAX_VALUE)
        .runForeach(env -> AppliedBatch.from(env.event()).ifPresent(b -> out.addAll(b.events())), kit.system())
        .toCompletableFuture().get(30, TimeUnit.SECONDS);
    return out;
  }

  @Test
  void telemetryIsAtMostOnceAndLosesExactlyTheSampleWhoseEffectFailedAfterTheOffsetWrite() throws Exception {
    PartitionId id = new PartitionId("telemetry", "readings", 0);
    PartitionActorSettings amo = PartitionActorSettings.create(kit.system()).withDeliveryMode(DeliveryMode.AT_MOST_ONCE);
    ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(id, amo, TelemetryActor::new));
    List<Inbound<?>> readings = new ArrayList<>();
    for (int o = 0; o < 10; o++) {
      readings.add(Inbound.of(id, o, new Reading("s" + (o % 3), o == 4 ? Double.NaN : o * 1.5)));
    }
    BatchOutcome.Applied first = assertInstanceOf(BatchOutcome.Applied.class, apply(actor, readings));
    assertEquals(10, first.nextOffset(), "the offset is written first");
    BatchOutcome.Applied again = assertInstanceOf(BatchOutcome.Applied.class, apply(actor, readings));
    assertEquals(10, again.droppedRedelivery(), "never retried");

    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    List<Object> kept = events(id);
    while (kept.size() < 9 && System.nanoTime() < deadline) {
      Thread.sleep(100);
      kept = events(id);
    }
    List<Long> offsets = kept.stream().map(e -> ((TelemetryActor.Sampled) e).offset()).toList();
    assertEquals(List.of(0L, 1L, 2L, 3L, 5L, 6L, 7L, 8L, 9L), offsets, "exactly offset 4 is lost");
  }

  /** Dies once, after the external write of version 3 and before the journal write. */
  static final class CrashingCounter extends CounterActor {
    static final AtomicBoolean crashed = new AtomicBoolean();

    CrashingCounter(PartitionContext context, VersionedStore store) {
      super(context, store);
    }

    @Override
    protected Effects<Written> onRecord(Long writes, Inbound<Update> in) {
      Effects<Written> effects = super.onRecord(writes, in);
      if (in.value().version() == 3 && crashed.compareAndSet(false, true)) {
        throw new IllegalStateException("process dies after the external write of v3");
      }
      return effects;
    }
  }

  @Test
  void countersAreAtLeastOnceAndARepeatedVersionedWriteChangesNothing() throws Exception {
    PartitionId id = new PartitionId("counters", "updates", 0);
    VersionedStore store = new VersionedStore(db);
    PartitionActorSettings alo = PartitionActorSettings.create(kit.system()).withDeliveryMode(DeliveryMode.AT_LEAST_ONCE);
    ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(id, alo,
        ctx -> new CrashingCounter(ctx, store)));
    List<Inbound<?>> updates = new ArrayList<>();
    for (int v = 1; v <= 5; v++) {
      updates.add(Inbound.of(id, v - 1, new CounterActor.Update("e1", v, v * 100L)));
    }
    assertInstanceOf(BatchOutcome.Rejected.class, apply(actor, updates), "the crash: nothing journaled");
    assertArrayEquals(new long[] {3, 300}, store.read("e1").orElseThrow(), "external writes v1..v3 happened");

    BatchOutcome.Applied redelivered = assertInstanceOf(BatchOutcome.Applied.class, apply(actor, updates));
    assertEquals(5, redelivered.applied());
    assertEquals(3 + 5, store.rawWrites(), "v1..v3 were written twice (at-least-once)");
    assertArrayEquals(new long[] {5, 500}, store.read("e1").orElseThrow(), "and the repeats changed nothing");
    List<Object> journaled = events(id);
    assertEquals(5, journaled.size(), "each update journaled once");
    assertEquals(List.of(false, false, false, true, true),
        journaled.stream().map(e -> ((CounterActor.Written) e).changed()).toList(),
        "the repeated writes of v1..v3 found newer-or-equal versions and changed nothing");
  }
}
