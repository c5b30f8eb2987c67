package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.NotSerializableException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import com.typesafe.config.ConfigFactory;
import io.fencepost.errors.HandlerFailedException;
import io.fencepost.errors.PartitionHaltedException;
import io.fencepost.internal.BatchEvent;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.JournalOperation;
import org.apache.pekko.persistence.testkit.PersistenceTestKitPlugin;
import org.apache.pekko.persistence.testkit.PersistenceTestKitSnapshotPlugin;
import org.apache.pekko.persistence.testkit.ProcessingPolicy;
import org.apache.pekko.persistence.testkit.ProcessingResult;
import org.apache.pekko.persistence.testkit.ProcessingSuccess$;
import org.apache.pekko.persistence.testkit.Reject;
import org.apache.pekko.persistence.testkit.WriteEvents;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Edges of the partition actor on Pekko's in-memory test journal: user code that throws, events the
 * journal refuses, a node whose clock runs ahead, and a Stop racing at-most-once effects.
 */
class PartitionEdgesTest {

  private static final ActorTestKit kit = ActorTestKit.create("partition-edges-test",
      PersistenceTestKitPlugin.getInstance().config()
          .withFallback(PersistenceTestKitSnapshotPlugin.config())
          .withFallback(ConfigFactory.load()));
  private static final PersistenceTestKit journal = PersistenceTestKit.create(kit.system());

  /** An event no serializer is bound to: the journal refuses to store it. */
  static final class Unstorable {
  }

  /** Counts applied events; values name what goes wrong: "bad-apply", "bad-key", "unstorable", "replay-bomb". */
  static final class Picky extends PartitionActor<String, Long, Object> {
    static volatile boolean replayBombArmed;

    Picky(PartitionContext context) {
      super(context);
    }

    @Override
    protected Long emptyState() {
      return 0L;
    }

    @Override
    protected Effects<Object> onRecord(Long count, Inbound<String> in) {
      return Effects.persist(in.value().equals("unstorable") ? new Unstorable() : in.value());
    }

    @Override
    protected Object onQuery(Long count, Query<?> query) {
      return count;   // the events applied, whatever is asked
    }

    @Override
    protected Long applyEvent(Long count, Object event) {
      if ("bad-apply".equals(event) || ("replay-bomb".equals(event) && replayBombArmed)) {
        throw new IllegalStateException("cannot apply " + event);
      }
      return count + 1;
    }

    @Override
    protected Optional<String> businessKey(Inbound<String> in) {
      if (in.value().equals("bad-key")) {
        throw new IllegalArgumentException("no key in " + in.value());
      }
      return Optional.of(in.value() + "@" + in.offset());
    }
  }

  private PartitionId partition;

  @BeforeEach
  void fresh() {
    journal.clearAll();
    journal.resetPolicy();
    Picky.replayBombArmed = false;
    partition = new PartitionId("g" + System.nanoTime(), "t", 0);
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  private PartitionActorSettings settings() {
    return PartitionActorSettings.create(kit.system()).withFailureBackoff(Duration.ofMillis(10), Duration.ofMillis(50));
  }

  private List<Inbound<?>> values(long from, String... values) {
    List<Inbound<?>> out = new ArrayList<>();
    for (String v : values) {
      out.add(Inbound.of(partition, from++, v));
    }
    return out;
  }

  private BatchOutcome apply(ActorRef<PartitionCommand> actor, List<Inbound<?>> records, DeadLetter... dead) {
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.ApplyBatch(records, List.of(dead), 0, probe.ref()));
    return probe.expectMessageClass(BatchOutcome.class, Duration.ofSeconds(10));
  }

  private DeadLetter deadLetter(HandlerFailedException h) {
    return new DeadLetter(partition, h.offset(), Optional.empty(), h.causeClass(), h.causeMessage(), 1);
  }

  private PartitionStatus status(ActorRef<PartitionCommand> actor) {
    TestProbe<PartitionStatus> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.GetStatus(probe.ref()));
    return probe.receiveMessage(Duration.ofSeconds(10));
  }

  private void stopAndWait(ActorRef<PartitionCommand> actor) {
    TestProbe<Object> watcher = kit.createTestProbe();
    actor.tell(new PartitionCommand.Stop());
    watcher.expectTerminated(actor, Duration.ofSeconds(10));
  }

  @Test
  void anExceptionInApplyEventOrBusinessKeyFailsOnlyItsRecordWhichCanThenBeDeadLettered() {
    ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(partition, settings(), Picky::new));
    for (String poison : List.of("bad-apply", "bad-key")) {
      long at = status(actor).nextOffset().orElse(0);
      List<Inbound<?>> batch = values(at, "a", poison, "b");
      HandlerFailedException h = assertInstanceOf(HandlerFailedException.class,
          assertInstanceOf(BatchOutcome.Rejected.class, apply(actor, batch)).error());
      assertEquals(at + 1, h.offset(), h.getMessage());
      assertFalse(h.isRetriable(), "a plain exception is not retriable: " + h.getMessage());
      assertEquals(poison.equals("bad-key") ? "java.lang.IllegalArgumentException" : "java.lang.IllegalStateException",
          h.causeClass());
      assertEquals(at, status(actor).nextOffset().orElse(0), "nothing of the batch was applied");
      // The pipeline resends the batch without the record, its dead letter in its place.
      List<Inbound<?>> rest = new ArrayList<>(batch);
      rest.remove(1);
      BatchOutcome.Applied applied = assertInstanceOf(BatchOutcome.Applied.class, apply(actor, rest, deadLetter(h)));
      assertEquals(new BatchOutcome.Applied(partition, at + 3, 2, 0, 0, true, 1, 0), applied);
    }
    assertEquals(4, status(actor).appliedRecords());
    assertEquals(2, status(actor).deadLettered());
  }

  @Test
  void aBusinessKeyWithAnUnpairedSurrogateFailsItsRecordInsteadOfCollidingWithAnother() {
    ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(partition, settings(), Picky::new));
    // As UTF-8 the unpaired surrogate would become '?': the key would share "pay-?@1"'s digest.
    List<Inbound<?>> batch = values(0, "pay-?", "pay-\ud800", "pay-\ud83d\udcb8");
    HandlerFailedException h = assertInstanceOf(HandlerFailedException.class,
        assertInstanceOf(BatchOutcome.Rejected.class, apply(actor, batch)).error());
    assertEquals(1, h.offset(), h.getMessage());
    assertFalse(h.isRetriable());
    assertEquals("java.lang.IllegalArgumentException", h.causeClass());
    assertTrue(h.getMessage().contains("unpaired surrogate"), h.getMessage());
    List<Inbound<?>> rest = new ArrayList<>(batch);
    rest.remove(1);
    assertEquals(new BatchOutcome.Applied(partition, 3, 2, 0, 0, true, 1, 0),
        assertInstanceOf(BatchOutcome.Applied.class, apply(actor, rest, deadLetter(h))));
  }

  @Test
  void anEventTheJournalRefusesFailsOnlyItsRecordWhichCanThenBeDeadLettered() {
    // The in-memory journal fails (rather than refuses) a write it cannot serialize; a real journal
    // refuses it (PartitionActorIT): refuse as a real journal does.
    journal.withPolicy(new ProcessingPolicy<JournalOperation>() {
      @Override
      public ProcessingResult tryProcess(String persistenceId, JournalOperation op) {
        boolean unstorable = op instanceof WriteEvents w && w.getBatch().stream()
            .anyMatch(e -> e instanceof BatchEvent b && b.events().stream().anyMatch(Unstorable.class::isInstance));
        return unstorable ? new Reject(new NotSerializableException(Unstorable.class.getName()))
            : ProcessingSuccess$.MODULE$;
      }
    });
    ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(partition, settings(), Picky::new));
    assertInstanceOf(BatchOutcome.Applied.class, apply(actor, values(0, "a")));
    List<Inbound<?>> batch = values(1, "b", "unstorable", "c");
    HandlerFailedException h = assertInstanceOf(HandlerFailedException.class,
        assertInstanceOf(BatchOutcome.Rejected.class, apply(actor, batch)).error());
    assertEquals(2, h.offset(), h.getMessage());
    assertFalse(h.isRetriable());
    assertTrue(h.causeMessage().contains("the journal cannot store its event " + Unstorable.class.getName()),
        h.causeMessage());
    // The actor stopped after the refusal; the next incarnation applies the rest with the dead letter.
    TestProbe<Object> watcher = kit.createTestProbe();
    watcher.expectTerminated(actor, Duration.ofSeconds(10));
    ActorRef<PartitionCommand> next = kit.spawn(PartitionActor.behavior(partition, settings(), Picky::new));
    List<Inbound<?>> rest = new ArrayList<>(batch);
    rest.remove(1);
    assertEquals(new BatchOutcome.Applied(partition, 4, 2, 0, 0, true, 1, 0), apply(next, rest, deadLetter(h)));
    assertEquals(3, status(next).appliedRecords());
  }

  @Test
  void aRefusedWriteWithoutAFaultyEventHaltsThePartitionInsteadOfLooping() {
    ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(partition, settings(), Picky::new));
    assertInstanceOf(BatchOutcome.Applied.class, apply(actor, values(0, "a")));
    journal.rejectNextPersisted();
    PartitionHaltedException halted = assertInstanceOf(PartitionHaltedException.class,
        assertInstanceOf(BatchOutcome.Rejected.class, apply(actor, values(1, "b", "c"))).error());
    assertTrue(halted.reason().startsWith("the journal refused the write of offsets [1..2]"), halted.reason());
    assertFalse(halted.isRetriable());
  }

  @Test
  void anEventApplyEventCannotReplayHaltsThePartitionWithoutWritingAnything() {
    ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(partition, settings(), Picky::new));
    assertInstanceOf(BatchOutcome.Applied.class, apply(actor, values(0, "a", "replay-bomb", "b")));
    assertInstanceOf(BatchOutcome.Applied.class, apply(actor, values(3, "c")));
    stopAndWait(actor);
    Picky.replayBombArmed = true;   // a new version whose applyEvent cannot apply an event already journaled
    ActorRef<PartitionCommand> next = kit.spawn(PartitionActor.behavior(partition, settings(), Picky::new));
    PartitionHaltedException halted = assertInstanceOf(PartitionHaltedException.class,
        assertInstanceOf(BatchOutcome.Rejected.class, apply(next, values(4, "d"))).error());
    assertTrue(halted.reason().contains("applyEvent threw on recovery for the journal entry of offsets up to 2"),
        halted.reason());
    assertTrue(halted.getCause() instanceof IllegalStateException, String.valueOf(halted.getCause()));
    assertEquals(2, journal.persistedInStorage(partition.persistenceId()).size(), "nothing written after the halt");
    Picky.replayBombArmed = false;  // fixed and redeployed: a new incarnation recovers and goes on
    stopAndWait(next);
    ActorRef<PartitionCommand> fixed = kit.spawn(PartitionActor.behavior(partition, settings(), Picky::new));
    assertEquals(new BatchOutcome.Applied(partition, 5, 1, 0, 0, true), apply(fixed, values(4, "d")));
  }

  @Test
  void aNodeWhoseClockRunsHoursAheadDoesNotAgeKeysOutOfTheWindowForEverybodyElse() {
    AtomicLong wall = new AtomicLong(1_700_000_000_000L);
    AtomicLong monotonic = new AtomicLong(0);
    PartitionActorSettings s = settings().withKeyWindow(true, 10_000, Duration.ofMinutes(10))
        .withClocks(wall::get, monotonic::get);
    String[] first = new String[50];
    for (int i = 0; i < first.length; i++) {
      first[i] = "pay-" + i;
    }
    ActorRef<PartitionCommand> a = kit.spawn(PartitionActor.behavior(partition, s, PartitionActorTest.Counter::new));
    assertEquals(50, ((BatchOutcome.Applied) apply(a, values(0, first))).applied());
    stopAndWait(a);

    wall.addAndGet(Duration.ofHours(2).toMillis());             // one node's clock runs 2 hours ahead
    monotonic.addAndGet(Duration.ofSeconds(30).toNanos());
    ActorRef<PartitionCommand> skewed = kit.spawn(PartitionActor.behavior(partition, s, PartitionActorTest.Counter::new));
    assertEquals(20, ((BatchOutcome.Applied) apply(skewed, values(50, other(20)))).applied());
    stopAndWait(skewed);

    wall.addAndGet(-Duration.ofHours(2).toMillis() + Duration.ofMinutes(1).toMillis());
    monotonic.addAndGet(Duration.ofSeconds(30).toNanos());
    ActorRef<PartitionCommand> back = kit.spawn(PartitionActor.behavior(partition, s, PartitionActorTest.Counter::new));
    // The producer re-sends the first 50 payments a minute after the originals: all still in the window.
    BatchOutcome.Applied resent = (BatchOutcome.Applied) apply(back, values(70, first));
    assertEquals(List.of(0, 50), List.of(resent.applied(), resent.droppedByKey()));
    assertEquals(70, status(back).appliedRecords());

    // The window still ages: after 10 minutes of owned time, measured on the owner's monotonic clock.
    monotonic.addAndGet(Duration.ofMinutes(10).plusSeconds(1).toNanos());
    apply(back, values(120, "later"));
    BatchOutcome.Applied late = (BatchOutcome.Applied) apply(back, values(121, "pay-0"));
    assertEquals(List.of(1, 0), List.of(late.applied(), late.droppedByKey()));
    List<Long> clocks = new ArrayList<>();
    for (Object e : journal.persistedInStorage(partition.persistenceId())) {
      clocks.add(((BatchEvent) e).atMillis());
    }
    long start = 1_700_000_000_000L;
    assertEquals(List.of(start, start, start, start + 601_000, start + 601_000), clocks,
        "the partition's clock moved by owned time only, never by the skewed wall clock");
  }

  private static String[] other(int n) {
    String[] out = new String[n];
    for (int i = 0; i < n; i++) {
      out[i] = "other-" + i;
    }
    return out;
  }

  @Test
  void atMostOnceEffectsOfADurableOffsetRunBeforeAStopThatArrivedMeanwhile() {
    PartitionActorSettings s = settings().withDeliveryMode(DeliveryMode.AT_MOST_ONCE);
    ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(partition, s, PartitionActorTest.Counter::new));
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    // The Stop waits in Pekko's stash while the offset is written; it then comes before RunAccepted.
    actor.tell(new PartitionCommand.ApplyBatch(values(0, "a", "b", "c"), List.of(), 0, probe.ref()));
    actor.tell(new PartitionCommand.Stop());
    assertEquals(3, ((BatchOutcome.Applied) probe.receiveMessage(Duration.ofSeconds(10))).applied());
    kit.createTestProbe().expectTerminated(actor, Duration.ofSeconds(10));
    List<Object> written = journal.persistedInStorage(partition.persistenceId());
    assertEquals(2, written.size(), "the offset write, then the effects write: " + written);
    assertEquals(3, ((BatchEvent) written.get(1)).events().size());
  }
}
