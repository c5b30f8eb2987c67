package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import com.typesafe.config.ConfigFactory;
import io.fencepost.errors.OffsetGapException;
import io.fencepost.errors.PartitionFencedException;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.PersistenceTestKitPlugin;
import org.apache.pekko.persistence.testkit.PersistenceTestKitSnapshotPlugin;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Fast checks of the actor on Pekko's in-memory test journal (the real journal is covered by *IT tests). */
class PartitionActorTest {

  private static final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private static final ActorTestKit kit = ActorTestKit.create("partition-actor-test",
      PersistenceTestKitPlugin.getInstance().config()
          .withFallback(PersistenceTestKitSnapshotPlugin.config())
          .withFallback(ConfigFactory.load()));
  private static final PersistenceTestKit journal = PersistenceTestKit.create(kit.system());

  static {
    Metrics.addRegistry(registry);
  }

  private PartitionId partition;

  /** Counts records; events are their offsets. */
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

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
    Metrics.removeRegistry(registry);
  }

  @BeforeEach
  void fresh() {
    journal.clearAll();
    partition = new PartitionId("g" + System.nanoTime(), "t", 0);
  }

  private ActorRef<PartitionCommand> spawn() {
    PartitionActorSettings settings = PartitionActorSettings.create(kit.system())
        .withFailureBackoff(Duration.ofMillis(10), Duration.ofMillis(50));
    return kit.spawn(PartitionActor.behavior(partition, settings, Counter::new));
  }

  private List<Inbound<?>> records(long from, long to) {
    List<Inbound<?>> out = new ArrayList<>();
    for (long o = from; o < to; o++) {
      out.add(Inbound.of(partition, o, "k" + o));
    }
    return out;
  }

  private BatchOutcome apply(ActorRef<PartitionCommand> actor, List<Inbound<?>> records) {
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.ApplyBatch(records, probe.ref()));
    return probe.expectMessageClass(BatchOutcome.class, Duration.ofSeconds(10));
  }

  private double counter(String name, String... tags) {
    List<String> all = new ArrayList<>(List.of("group", partition.group(), "topic", "t", "partition", "0"));
    all.addAll(List.of(tags));
    var c = registry.find(name).tags(all.toArray(new String[0])).counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void metricsCountAppliedAndDroppedRecordsPerPartition() {
    ActorRef<PartitionCommand> actor = spawn();
    apply(actor, records(0, 10));
    apply(actor, records(5, 10));                                         // 5 redeliveries
    apply(actor, List.of(Inbound.of(partition, 10, "k3")));               // a business-key duplicate
    assertEquals(10, counter("fencepost.records.applied"));
    assertEquals(5, counter("fencepost.records.dropped", "reason", "redelivery"));
    assertEquals(1, counter("fencepost.records.dropped", "reason", "business-key"));
    var batches = registry.find("fencepost.batch.records").tag("group", partition.group()).summary();
    assertEquals(2, batches.count(), "two writes: the first batch and the key-duplicate's offset advance");
  }

  @Test
  void aFailedJournalWriteIsRejectedAsRetriableAndTheResendAppliesOnce() {
    ActorRef<PartitionCommand> actor = spawn();
    apply(actor, records(0, 5));
    journal.failNextPersisted();
    BatchOutcome.Rejected rejected = assertInstanceOf(BatchOutcome.Rejected.class, apply(actor, records(5, 10)));
    assertTrue(rejected.error().isRetriable(), rejected.error().getMessage());
    assertTrue(!(rejected.error() instanceof PartitionFencedException), "a journal failure is not a fence");
    assertTrue(rejected.error().getMessage().contains("offsets [5..9]"), rejected.error().getMessage());
    BatchOutcome.Applied again = assertInstanceOf(BatchOutcome.Applied.class, apply(actor, records(5, 10)));
    assertEquals(new BatchOutcome.Applied(partition, 10, 5, 0, 0, true), again);
    // The restart after the failure recovered from the journal, not on top of the old state.
    TestProbe<PartitionStatus> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.GetStatus(probe.ref()));
    assertEquals(10, probe.receiveMessage().appliedRecords());
  }

  @Test
  void recordsOfAnEmptyPartitionStartAtWhateverOffsetArrivesFirst() {
    ActorRef<PartitionCommand> actor = spawn();
    BatchOutcome.Applied first = assertInstanceOf(BatchOutcome.Applied.class, apply(actor, records(500, 503)));
    assertEquals(503, first.nextOffset());
    TestProbe<PartitionStatus> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.GetStatus(probe.ref()));
    PartitionStatus status = probe.receiveMessage();
    assertEquals(503, status.nextOffset().getAsLong());
    assertEquals(3, status.windowKeys());
  }

  @Test
  void anEmptyPartitionRefusesAFirstBatchWhoseSenderDoesNotVouchForWhereThePartitionStarts() {
    ActorRef<PartitionCommand> actor = spawn();
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.ApplyBatch(records(500, 503), List.of(), Long.MAX_VALUE, probe.ref()));
    OffsetGapException e = assertInstanceOf(OffsetGapException.class,
        assertInstanceOf(BatchOutcome.Rejected.class, probe.receiveMessage()).error());
    assertEquals(-1, e.storedNextOffset());
    assertEquals(500, e.nextPresent());
    assertTrue(e.getMessage().contains("has no stored offset"), e.getMessage());
    assertTrue(status(actor).nextOffset().isEmpty(), "nothing stored");
    actor.tell(new PartitionCommand.ApplyBatch(records(500, 503), List.of(), 0, probe.ref()));
    assertEquals(new BatchOutcome.Applied(partition, 503, 3, 0, 0, true), probe.receiveMessage());
  }
  @Test
  void aBatchThatWouldSkipOffsetsIsRefusedAndAppliedOnceTheSenderVouchesForTheHole() {
    ActorRef<PartitionCommand> actor = spawn();
    apply(actor, records(0, 5));
    // Records 5..9 went to another stream: a batch starting at 10 must not move the offset past them.
    BatchOutcome.Rejected gap = assertInstanceOf(BatchOutcome.Rejected.class, apply(actor, records(10, 15)));
    OffsetGapException e = assertInstanceOf(OffsetGapException.class, gap.error());
    assertEquals(List.of(5L, 5L, 10L), List.of(e.storedNextOffset(), e.firstMissing(), e.nextPresent()));
    assertTrue(e.getMessage().contains("lacks offsets [5..9]"), e.getMessage());
    assertEquals(5, status(actor).nextOffset().getAsLong(), "nothing of the refused batch was applied");

    // A hole inside a batch that vouches for nothing (as the pipeline sends them) counts too.
    List<Inbound<?>> holed = new ArrayList<>(records(5, 8));
    holed.addAll(records(9, 12));
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.ApplyBatch(holed, List.of(), Long.MAX_VALUE, probe.ref()));
    OffsetGapException inside = assertInstanceOf(OffsetGapException.class,
        assertInstanceOf(BatchOutcome.Rejected.class, probe.receiveMessage()).error());
    assertEquals(List.of(5L, 8L, 9L), List.of(inside.storedNextOffset(), inside.firstMissing(), inside.nextPresent()));
    assertEquals(5, status(actor).nextOffset().getAsLong());

    // The log holds nothing readable at 5..9 (say, transaction markers): the sender vouches for it.
    actor.tell(new PartitionCommand.ApplyBatch(records(10, 15), List.of(), 5, probe.ref()));
    assertEquals(new BatchOutcome.Applied(partition, 15, 5, 0, 0, true), probe.receiveMessage());
    // Records below the stored offset are redeliveries, not holes; the rest is dense: applied.
    assertEquals(new BatchOutcome.Applied(partition, 17, 2, 3, 0, true), apply(actor, records(12, 17)));
    // Holes above the offset the sender covers from are the sender's promise.
    List<Inbound<?>> vouched = new ArrayList<>(records(17, 19));
    vouched.addAll(records(25, 27));
    actor.tell(new PartitionCommand.ApplyBatch(vouched, List.of(), 17, probe.ref()));
    assertEquals(new BatchOutcome.Applied(partition, 27, 4, 0, 0, true), probe.receiveMessage());
    assertEquals(16, status(actor).appliedRecords());
  }

  private PartitionStatus status(ActorRef<PartitionCommand> actor) {
    TestProbe<PartitionStatus> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.GetStatus(probe.ref()));
    return probe.receiveMessage();
  }
}
