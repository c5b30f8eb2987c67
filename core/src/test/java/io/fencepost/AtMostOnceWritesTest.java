package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.fencepost.errors.PartitionFencedException;
import io.fencepost.internal.BatchEvent;
import io.fencepost.internal.PartitionState;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.JournalOperation;
import org.apache.pekko.persistence.testkit.ProcessingPolicy;
import org.apache.pekko.persistence.testkit.ProcessingResult;
import org.apache.pekko.persistence.testkit.ProcessingSuccess$;
import org.apache.pekko.persistence.testkit.StorageFailure;
import org.apache.pekko.persistence.testkit.WriteEvents;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * At-most-once's journal writes on Pekko's in-memory test journal: a batch's effects ride on the next
 * batch's offset write, are written alone once {@code at-most-once-linger} has passed or a Stop
 * comes, and survive a write that fails without committing.
 */
class AtMostOnceWritesTest {

  private static final ActorTestKit kit = InMemoryPartitions.kit("at-most-once-writes-test");
  private static final PersistenceTestKit journal = PersistenceTestKit.create(kit.system());
  private static final SimpleMeterRegistry meters = new SimpleMeterRegistry();

  static {
    FencepostMeters.get(kit.system()).use(meters);
  }

  private PartitionId partition;

  @BeforeEach
  void fresh() {
    journal.clearAll();
    journal.resetPolicy();
    partition = new PartitionId("g" + System.nanoTime(), "t", 0);
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  private ActorRef<PartitionCommand> spawn(Duration linger) {
    PartitionActorSettings s = PartitionActorSettings.create(kit.system())
        .withDeliveryMode(DeliveryMode.AT_MOST_ONCE)
        .withFailureBackoff(Duration.ofMillis(10), Duration.ofMillis(50))
        .withAtMostOnceLinger(linger);
    return kit.spawn(PartitionActor.behavior(partition, s, PartitionEdgesTest.Picky::new));
  }

  /** Every state the actor publishes to queries, as "nextOffset:events applied". */
  private final Queue<String> views = new ConcurrentLinkedQueue<>();

  private ActorRef<PartitionCommand> spawnPublishing(Duration linger) {
    PartitionActorSettings s = PartitionActorSettings.create(kit.system())
        .withDeliveryMode(DeliveryMode.AT_MOST_ONCE)
        .withAtMostOnceLinger(linger);
    return kit.spawn(PartitionActor.behavior(partition, s, PartitionEdgesTest.Picky::new,
        v -> views.add(v.nextOffset() + ":" + v.answer(new Query<Long>() { }))));
  }

  private List<Inbound<?>> values(long from, int count) {
    List<Inbound<?>> out = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      out.add(Inbound.of(partition, from + i, "v" + (from + i)));
    }
    return out;
  }

  private BatchOutcome apply(ActorRef<PartitionCommand> actor, List<Inbound<?>> records) {
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.ApplyBatch(records, List.of(), probe.ref()));
    return probe.expectMessageClass(BatchOutcome.class, Duration.ofSeconds(10));
  }

  /** Each journal entry as "fromOffset..nextOffset:events". */
  private List<String> entries() {
    List<String> out = new ArrayList<>();
    for (Object o : journal.persistedInStorage(partition.persistenceId())) {
      BatchEvent e = (BatchEvent) o;
      out.add(e.fromOffset() + ".." + e.nextOffset() + ":" + e.events());
    }
    return out;
  }

  /** Records whose end-to-end latency was recorded (their effects are journaled). */
  private long latencies() {
    var timer = meters.find("fencepost.effect.latency").tag("group", partition.group()).timer();
    return timer == null ? 0 : timer.count();
  }

  /** The handlers run on a message the actor sends itself before its reply; a GetState comes after it. */
  private void awaitHandlers(ActorRef<PartitionCommand> actor) {
    TestProbe<Object> state = kit.createTestProbe();
    actor.tell(new PartitionCommand.GetState(state.ref()));
    state.receiveMessage(Duration.ofSeconds(10));
  }

  /** Waits (at most 10 s) until the journal holds {@code count} entries of this partition. */
  private void awaitEntries(int count) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (entries().size() < count && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
  }

  private void stopAndWait(ActorRef<PartitionCommand> actor) {
    actor.tell(new PartitionCommand.Stop());
    kit.createTestProbe().expectTerminated(actor, Duration.ofSeconds(10));
  }

  private static final long NONE = PartitionState.NO_OFFSET;

  /**
   * Queries see a state only once the effects of every record below its offset are journaled: the
   * offset write comes first at most once, and a state published then would lack its batch's effects.
   */
  @Test
  void aStateIsOfferedToQueriesOnlyWithTheEffectsOfEveryRecordBelowItsOffset() throws Exception {
    ActorRef<PartitionCommand> lingering = spawnPublishing(Duration.ofMinutes(5));
    apply(lingering, values(0, 3));
    apply(lingering, values(3, 3));
    awaitHandlers(lingering);
    stopAndWait(lingering);   // the stop writes the waiting effects
    assertEquals(List.of("-1:0", "3:3", "6:6"), List.copyOf(views),
        "the second offset write carried the first batch's effects: settled below 3; the stop wrote the rest");

    views.clear();
    fresh();
    ActorRef<PartitionCommand> eager = spawnPublishing(Duration.ZERO);
    apply(eager, values(0, 3));
    awaitHandlers(eager);
    apply(eager, values(3, 2));
    awaitHandlers(eager);
    stopAndWait(eager);
    for (String view : views) {
      String[] v = view.split(":");
      assertEquals(Math.max(0, Long.parseLong(v[0])), Long.parseLong(v[1]), "published " + views);
    }
    assertEquals("5:5", List.copyOf(views).get(views.size() - 1), "published " + views);
  }

  /**
   * A busy partition: each batch comes as soon as the one before it is accepted (as the pipeline sends
   * them), so at every write the handlers of its own batch have yet to run and, within the linger,
   * effects always wait: the stored state is never settled. Queries must still see a state that
   * advances, each with the effects of every record below its offset.
   */
  @Test
  void aBusyPartitionsQueriesSeeItsSettledStateAdvance() {
    ActorRef<PartitionCommand> busy = spawnPublishing(Duration.ofMinutes(5));
    for (int b = 0; b < 6; b++) {
      apply(busy, values(3L * b, 3));
    }
    awaitHandlers(busy);
    List<String> seen = List.copyOf(views);
    for (String view : seen) {
      String[] v = view.split(":");
      assertEquals(Math.max(0, Long.parseLong(v[0])), Long.parseLong(v[1]), "every effect below the offset: " + seen);
    }
    long highest = seen.stream().mapToLong(v -> Long.parseLong(v.split(":")[0])).max().orElse(-1);
    assertTrue(highest >= 12, "a settled state at least 3 batches along before the stop, published " + seen);
    stopAndWait(busy);
  }

  /**
   * Batches sent back to back are accepted before any of their handlers run: a state published then
   * must not claim the offsets of batches whose handlers have not run.
   */
  @Test
  void backToBackBatchesNeverPublishAStateMissingEffects() {
    ActorRef<PartitionCommand> busy = spawnPublishing(Duration.ofMinutes(5));
    TestProbe<BatchOutcome> replies = kit.createTestProbe();
    for (int b = 0; b < 6; b++) {
      busy.tell(new PartitionCommand.ApplyBatch(values(3L * b, 3), List.of(), replies.ref()));
    }
    for (int b = 0; b < 6; b++) {
      replies.expectMessageClass(BatchOutcome.class, Duration.ofSeconds(10));
    }
    awaitHandlers(busy);
    stopAndWait(busy);
    List<String> seen = List.copyOf(views);
    for (String view : seen) {
      String[] v = view.split(":");
      assertEquals(Math.max(0, Long.parseLong(v[0])), Long.parseLong(v[1]), "every effect below the offset: " + seen);
    }
    assertEquals("18:18", seen.get(seen.size() - 1), "published " + seen);
  }

  @Test
  void aBatchsEffectsRideOnTheNextBatchsOffsetWriteAndAStopWritesTheLast() {
    ActorRef<PartitionCommand> actor = spawn(Duration.ofMinutes(5));
    assertEquals(3, ((BatchOutcome.Applied) apply(actor, values(0, 3))).nextOffset());
    assertEquals(6, ((BatchOutcome.Applied) apply(actor, values(3, 3))).nextOffset());
    assertEquals(9, ((BatchOutcome.Applied) apply(actor, values(6, 3))).nextOffset());
    awaitHandlers(actor);
    assertEquals(6, latencies(), "end-to-end latency: recorded once a record's effects are journaled");
    stopAndWait(actor);
    assertEquals(9, latencies());
    assertEquals(List.of(
        NONE + "..3:[]",
        "3..6:[v0, v1, v2]",
        "6..9:[v3, v4, v5]",
        "9..9:[v6, v7, v8]"), entries(), "one write per batch; the Stop's write carries the last effects");
  }

  @Test
  void effectsNoBatchCarriesAreWrittenAloneAfterTheLinger() throws Exception {
    ActorRef<PartitionCommand> actor = spawn(Duration.ofMillis(100));
    apply(actor, values(0, 2));
    awaitEntries(2);
    assertEquals(List.of(NONE + "..2:[]", "2..2:[v0, v1]"), entries());
    apply(actor, values(2, 1));
    stopAndWait(actor);
    assertEquals(List.of(NONE + "..2:[]", "2..2:[v0, v1]", "2..3:[]", "3..3:[v2]"), entries());
  }

  @Test
  void aZeroLingerWritesEffectsAtOnceInAWriteOfTheirOwn() {
    ActorRef<PartitionCommand> actor = spawn(Duration.ZERO);
    apply(actor, values(0, 2));
    apply(actor, values(2, 2));
    stopAndWait(actor);
    assertEquals(List.of(NONE + "..2:[]", "2..2:[v0, v1]", "2..4:[]", "4..4:[v2, v3]"), entries());
  }

  @Test
  void effectsCarriedByAWriteThatFailedWithoutCommittingRideOnTheResend() {
    ActorRef<PartitionCommand> actor = spawn(Duration.ofMinutes(5));
    apply(actor, values(0, 2));
    journal.failNextPersisted();
    BatchOutcome.Rejected failed = assertInstanceOf(BatchOutcome.Rejected.class, apply(actor, values(2, 2)));
    assertTrue(failed.error().isRetriable(), failed.error().getMessage());
    assertEquals(6, ((BatchOutcome.Applied) apply(actor, values(2, 4))).nextOffset(), "the resend, with more records");
    stopAndWait(actor);
    assertEquals(List.of(NONE + "..2:[]", "2..6:[v0, v1]", "6..6:[v2, v3, v4, v5]"), entries(),
        "the failed write's effects were carried again, once");
    assertEquals(6, recovered().appliedRecords());
  }

  @Test
  void aLoneEffectsWriteThatFailedIsWrittenAgain() throws Exception {
    AtomicInteger failed = new AtomicInteger();
    journal.withPolicy(new ProcessingPolicy<JournalOperation>() {
      @Override
      public ProcessingResult tryProcess(String persistenceId, JournalOperation op) {
        boolean effectsAlone = op instanceof WriteEvents w && w.getBatch().get(0) instanceof BatchEvent b
            && b.fromOffset() == b.nextOffset();
        return effectsAlone && failed.getAndIncrement() == 0
            ? new StorageFailure(new RuntimeException("database restarting")) : ProcessingSuccess$.MODULE$;
      }
    });
    ActorRef<PartitionCommand> actor = spawn(Duration.ofMillis(50));
    apply(actor, values(0, 2));
    awaitEntries(2);
    stopAndWait(actor);
    assertEquals(2, failed.get(), "the effects' own write failed once, then was made again");
    assertEquals(List.of(NONE + "..2:[]", "2..2:[v0, v1]"), entries());
  }

  @Test
  void effectsTheJournalRefusesAreLostAndTheBatchCarryingThemIsResentWithoutThem() {
    ActorRef<PartitionCommand> actor = spawn(Duration.ofMinutes(5));
    apply(actor, values(0, 2));
    journal.rejectNextPersisted();
    BatchOutcome.Rejected refused = assertInstanceOf(BatchOutcome.Rejected.class, apply(actor, values(2, 2)));
    assertTrue(refused.error().isRetriable(), refused.error().getMessage());
    assertTrue(refused.error().getMessage().contains("carried the at-most-once effects"), refused.error().getMessage());
    // The actor stops after a refusal (as for any refused write); the next incarnation takes the resend.
    kit.createTestProbe().expectTerminated(actor, Duration.ofSeconds(10));
    ActorRef<PartitionCommand> next = spawn(Duration.ofMinutes(5));
    assertEquals(4, ((BatchOutcome.Applied) apply(next, values(2, 2))).nextOffset());
    stopAndWait(next);
    assertEquals(List.of(NONE + "..2:[]", "2..4:[]", "4..4:[v2, v3]"), entries(), "offsets 0 and 1: effects lost");
  }

  @Test
  void anOffsetWriteThatFailedButCommittedLateHasItsHandlersRunWhenALaterWriteMeetsIt() {
    ActorRef<PartitionCommand> actor = spawn(Duration.ofMinutes(5));
    apply(actor, values(0, 2));
    offsetWriteFailsThenCommitsLate(actor);
    // The Stop writes the effects of 0..1 again, meets the late write on its sequence number, and must
    // not take it for another incarnation's: offsets 2..3 are durable, so their handlers run now.
    stopAndWait(actor);
    assertEquals(List.of(NONE + "..2:[]", "2..4:[v0, v1]", "4..4:[v2, v3]"), entries());
  }

  @Test
  void aResendThatMeetsTheLateCommitOfItsFirstWriteRunsItsHandlersOnce() {
    ActorRef<PartitionCommand> actor = spawn(Duration.ofMinutes(5));
    apply(actor, values(0, 2));
    offsetWriteFailsThenCommitsLate(actor);
    // The pipeline resends the batch: its write meets the late one.
    BatchOutcome.Rejected again = assertInstanceOf(BatchOutcome.Rejected.class, apply(actor, values(2, 2)));
    assertTrue(again.error().isRetriable(), again.error().getMessage());
    assertTrue(again.error().getMessage().contains("committed late, up to offset 3"), again.error().getMessage());
    BatchOutcome.Applied third = assertInstanceOf(BatchOutcome.Applied.class, apply(actor, values(2, 2)));
    assertEquals(2, third.droppedRedelivery(), "the late write holds them");
    stopAndWait(actor);
    assertEquals(List.of(NONE + "..2:[]", "2..4:[v0, v1]", "4..4:[v2, v3]"), entries(), "handlers of 2..3 ran once");
  }

  /**
   * The offset write of 2..3 (carrying the waiting effects of 0..1) fails as a timeout would and is
   * answered retriable; it then commits late, after the recovery that followed the failure, so the
   * actor's next write meets it on its sequence number (2).
   */
  private void offsetWriteFailsThenCommitsLate(ActorRef<PartitionCommand> actor) {
    AtomicReference<Object> late = new AtomicReference<>();
    AtomicInteger writes = new AtomicInteger();
    journal.withPolicy(new ProcessingPolicy<JournalOperation>() {
      @Override
      public ProcessingResult tryProcess(String persistenceId, JournalOperation op) {
        if (!(op instanceof WriteEvents w)) {
          return ProcessingSuccess$.MODULE$;
        }
        return switch (writes.incrementAndGet()) {
          case 1 -> {   // offsets 2..3, carrying the effects of 0..1: reported failed (a timeout) ...
            late.set(w.getBatch().get(0));
            yield new StorageFailure(new RuntimeException("write timed out"));
          }
          case 2 -> new StorageFailure(new SQLException("ERROR: duplicate key value violates unique constraint "
              + "\"event_journal_pkey\"  Detail: Key (persistence_id, sequence_number)=(" + persistenceId
              + ", 2) already exists.", "23505"));
          default -> ProcessingSuccess$.MODULE$;
        };
      }
    });
    BatchOutcome.Rejected failed = assertInstanceOf(BatchOutcome.Rejected.class, apply(actor, values(2, 2)));
    assertTrue(failed.error().isRetriable(), failed.error().getMessage());
    journal.persistForRecovery(partition.persistenceId(), List.of(late.get()));
  }

  @Test
  void anOffsetWriteThatCommittedLateBeforeAnotherIncarnationsWriteIsLoggedAsLost() {
    ListAppender<ILoggingEvent> seen = watchLog();
    try {
      ActorRef<PartitionCommand> actor = spawn(Duration.ofMinutes(5));
      apply(actor, values(0, 2));
      AtomicInteger writes = new AtomicInteger();
      journal.withPolicy(new ProcessingPolicy<JournalOperation>() {
        @Override
        public ProcessingResult tryProcess(String persistenceId, JournalOperation op) {
          if (op instanceof WriteEvents w && writes.incrementAndGet() == 1) {
            // Offsets 2..3 are reported failed (a timeout), yet commit; another incarnation writes after
            // them, all before this incarnation's recovery reads the journal.
            BatchEvent late = (BatchEvent) w.getBatch().get(0);
            journal.persistForRecovery(persistenceId, List.of(late, new BatchEvent("other", 4, 6, 0L, List.of(),
                new long[0], 0, 0)));
            return new StorageFailure(new RuntimeException("write timed out"));
          }
          return ProcessingSuccess$.MODULE$;
        }
      });
      BatchOutcome.Rejected fenced = assertInstanceOf(BatchOutcome.Rejected.class, apply(actor, values(2, 2)));
      assertInstanceOf(PartitionFencedException.class, fenced.error());
      kit.createTestProbe().expectTerminated(actor, Duration.ofSeconds(10));
      assertEquals(List.of("[t-0] the effects of offsets [0..1] (2 events, 0 outbox records) may be LOST (at-most-once, "
          + "never retried): the write carrying them failed and another incarnation wrote since; they are journaled "
          + "only if that write committed late",
          "[t-0] the offset write of [2..3] failed earlier and may have committed late; if it did, "
          + "its handlers never ran and their effects are LOST (at-most-once): another incarnation wrote first"),
          lost(seen));
    } finally {
      ((Logger) LoggerFactory.getLogger("io.fencepost")).detachAppender(seen);
    }
  }

  private static ListAppender<ILoggingEvent> watchLog() {
    ListAppender<ILoggingEvent> seen = new ListAppender<>();
    seen.start();
    ((Logger) LoggerFactory.getLogger("io.fencepost")).addAppender(seen);
    return seen;
  }

  private static List<String> lost(ListAppender<ILoggingEvent> seen) {
    return seen.list.stream().map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains("LOST")).toList();
  }

  @Test
  void effectsStillWaitingWhenTheActorIsStoppedFromOutsideAreLoggedAsLost() {
    ListAppender<ILoggingEvent> seen = watchLog();
    try {
      ActorRef<PartitionCommand> actor = spawn(Duration.ofMinutes(5));
      apply(actor, values(0, 2));
      awaitHandlers(actor);
      kit.stop(actor, Duration.ofSeconds(10));   // as a pipeline's forced stop does
      assertEquals(List.of("[t-0] the effects of offsets [0..1] (2 events, 0 outbox records) LOST (at-most-once, "
          + "never retried): the actor stopped before they were written"), lost(seen));
    } finally {
      ((Logger) LoggerFactory.getLogger("io.fencepost")).detachAppender(seen);
    }
    assertEquals(List.of(NONE + "..2:[]"), entries());
  }

  /** A fresh incarnation's view of the journal. */
  private PartitionStatus recovered() {
    ActorRef<PartitionCommand> actor = spawn(Duration.ofMinutes(5));
    PartitionStatus status = InMemoryPartitions.status(kit, actor);
    stopAndWait(actor);
    return status;
  }
}
