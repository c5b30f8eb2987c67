package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import com.typesafe.config.ConfigFactory;
import io.fencepost.errors.HandlerFailedException;
import io.fencepost.errors.RetriableException;
import io.fencepost.internal.BatchEvent;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.PersistenceTestKitPlugin;
import org.apache.pekko.persistence.testkit.PersistenceTestKitSnapshotPlugin;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Effects.call and the outbox on Pekko's in-memory journal (the real journal: ExternalCallIT, OutboxIT). */
class ExternalCallAndOutboxTest {

  private static final ActorTestKit kit = ActorTestKit.create("external-call-test",
      PersistenceTestKitPlugin.getInstance().config()
          .withFallback(PersistenceTestKitSnapshotPlugin.config())
          .withFallback(ConfigFactory.load()));
  private static final PersistenceTestKit journal = PersistenceTestKit.create(kit.system());

  private PartitionId partition;
  private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
  private final AtomicInteger continuationFailures = new AtomicInteger();
  private volatile Exception callFailure;

  /** Charges each record's value; values starting with "pub:" are published instead. */
  final class Charger extends PartitionActor<String, Long, String> {
    Charger(PartitionContext context) {
      super(context);
    }

    @Override
    protected Long emptyState() {
      return 0L;
    }

    @Override
    protected Effects<String> onRecord(Long count, Inbound<String> in) {
      if (in.value().startsWith("pub:")) {
        return Effects.persist("published " + in.offset())
            .andPublish("out", in.value(), "v" + in.offset())
            .andPublish("out", null, "second");
      }
      return Effects.call(key -> {
        calls.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
        Exception failure = callFailure;
        if (failure != null) {
          throw failure;
        }
        return "charge-of-" + key;
      }, outcome -> {
        if (continuationFailures.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
          throw new RetriableException("continuation failed on purpose");
        }
        return Effects.persist(outcome);
      });
    }

    @Override
    protected Long applyEvent(Long count, String event) {
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
  }

  @BeforeEach
  void fresh() {
    journal.clearAll();
    partition = new PartitionId("g" + System.nanoTime(), "t", 0);
  }

  private ActorRef<PartitionCommand> spawn() {
    PartitionActorSettings settings = PartitionActorSettings.create(kit.system())
        .withFailureBackoff(Duration.ofMillis(10), Duration.ofMillis(50))
        .withCallTimeout(Duration.ofSeconds(2));
    return kit.spawn(PartitionActor.behavior(partition, settings, Charger::new));
  }

  private BatchOutcome apply(ActorRef<PartitionCommand> actor, long from, String... values) {
    List<Inbound<?>> records = new ArrayList<>();
    for (int i = 0; i < values.length; i++) {
      records.add(Inbound.of(partition, from + i, values[i]));
    }
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.ApplyBatch(records, probe.ref()));
    return probe.expectMessageClass(BatchOutcome.class, Duration.ofSeconds(10));
  }

  private List<BatchEvent> journaled() {
    return journal.persistedInStorage(partition.persistenceId()).stream().map(e -> (BatchEvent) e).toList();
  }

  @Test
  void eachCallIsMadeOnceWithTheBusinessKeyAndItsOutcomeJournaledBeforeTheOffsetMoves() {
    ActorRef<PartitionCommand> actor = spawn();
    BatchOutcome outcome = apply(actor, 0, "pay-1", "pay-2");
    assertEquals(new BatchOutcome.Applied(partition, 2, 2, 0, 0, true, 0, 0), outcome);
    assertEquals(Map.of("pay-1", 1, "pay-2", 1), counts());
    List<BatchEvent> entries = journaled();
    // one entry per call outcome (offset unchanged), then the batch
    assertEquals(3, entries.size());
    assertEquals("pay-1", entries.get(0).calls().get(0).key());
    assertEquals(0, entries.get(0).calls().get(0).offset());
    assertEquals(entries.get(0).fromOffset(), entries.get(0).nextOffset());
    assertEquals("charge-of-pay-2", entries.get(1).calls().get(0).outcome());
    assertEquals(List.of("charge-of-pay-1", "charge-of-pay-2"), entries.get(2).events());
    assertEquals(2, entries.get(2).nextOffset());
  }

  @Test
  void aRetriedBatchGetsTheStoredOutcomeAndTheProviderIsNotCalledAgain() {
    continuationFailures.set(1);
    ActorRef<PartitionCommand> actor = spawn();
    BatchOutcome first = apply(actor, 0, "pay-1");
    HandlerFailedException failure = assertInstanceOf(HandlerFailedException.class,
        ((BatchOutcome.Rejected) first).error());
    assertTrue(failure.isRetriable());
    BatchOutcome second = apply(actor, 0, "pay-1");
    assertEquals(new BatchOutcome.Applied(partition, 1, 1, 0, 0, true, 0, 0), second);
    assertEquals(Map.of("pay-1", 1), counts());
    assertEquals(1, journaled().stream().mapToLong(e -> e.calls().size()).sum());
  }

  @Test
  void theStoredOutcomeSurvivesARestartOfTheActor() {
    continuationFailures.set(1);
    ActorRef<PartitionCommand> actor = spawn();
    assertInstanceOf(BatchOutcome.Rejected.class, apply(actor, 0, "pay-1"));
    kit.stop(actor);
    BatchOutcome again = apply(spawn(), 0, "pay-1");
    assertEquals(new BatchOutcome.Applied(partition, 1, 1, 0, 0, true, 0, 0), again);
    assertEquals(Map.of("pay-1", 1), counts());
  }

  @Test
  void anIoFailureOfTheCallIsRetriableAndOtherFailuresAreFatal() {
    ActorRef<PartitionCommand> actor = spawn();
    callFailure = new IOException("connection refused");
    HandlerFailedException io = assertInstanceOf(HandlerFailedException.class,
        ((BatchOutcome.Rejected) apply(actor, 0, "pay-1")).error());
    assertTrue(io.isRetriable());
    assertEquals("java.io.IOException", io.causeClass());
    callFailure = new IllegalArgumentException("card declined");
    HandlerFailedException fatal = assertInstanceOf(HandlerFailedException.class,
        ((BatchOutcome.Rejected) apply(actor, 0, "pay-1")).error());
    assertEquals(false, fatal.isRetriable());
    assertEquals("external call failed: card declined", fatal.causeMessage());
    callFailure = null;
    assertEquals(new BatchOutcome.Applied(partition, 1, 1, 0, 0, true, 0, 0), apply(actor, 0, "pay-1"));
    assertEquals(Map.of("pay-1", 3), counts());
    assertEquals(1, journaled().stream().mapToLong(e -> e.calls().size()).sum(), "failed calls journal nothing");
  }

  @Test
  void outboxRecordsAreWrittenWithTheEventsAndTheOffsetInOneEntry() {
    ActorRef<PartitionCommand> actor = spawn();
    BatchOutcome outcome = apply(actor, 0, "pub:a", "pub:b");
    assertEquals(new BatchOutcome.Applied(partition, 2, 2, 0, 0, true, 0, 4), outcome);
    List<BatchEvent> entries = journaled();
    assertEquals(1, entries.size());
    BatchEvent e = entries.get(0);
    assertEquals(List.of("published 0", "published 1"), e.events());
    assertEquals(4, e.outbox().size());
    assertEquals(new OutboxRecord("out", Optional.of("pub:a"), "v0".getBytes(StandardCharsets.UTF_8)),
        e.outbox().get(0));
    assertEquals(Optional.empty(), e.outbox().get(1).key());
    assertEquals("v1", e.outbox().get(2).valueAsString());
  }

  @Test
  void publishingAlongsideACallIsRefusedWithTheFix() {
    Effects<String> call = Effects.call(key -> "x", outcome -> Effects.none());
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> call.andPublish("t", "k", "v"));
    assertEquals("publish from the continuation of Effects.call, not alongside the call", e.getMessage());
  }

  private Map<String, Integer> counts() {
    Map<String, Integer> out = new TreeMap<>();
    calls.forEach((k, v) -> out.put(k, v.get()));
    return out;
  }
}
