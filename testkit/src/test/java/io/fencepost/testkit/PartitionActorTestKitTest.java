package io.fencepost.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import io.fencepost.DeadLetter;
import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;
import io.fencepost.PartitionId;
import io.fencepost.errors.RetriableException;
import io.fencepost.kafka.serde.JsonDeserializer;
import org.junit.jupiter.api.Test;

/** The kit plays the pipeline's part against a real partition actor on the in-memory journal. */
class PartitionActorTestKitTest {

  /** The words seen, in order. "boom" fails for good; "flaky" fails twice, then works; "call" calls out; "pub" publishes. */
  static final class Words extends PartitionActor<String, List<String>, String> {
    static final Map<String, AtomicInteger> FLAKY = new ConcurrentHashMap<>();
    static final List<String> CALLED_WITH = new CopyOnWriteArrayList<>();

    Words(PartitionContext context) {
      super(context);
    }

    @Override
    protected List<String> emptyState() {
      return List.of();
    }

    @Override
    protected Effects<String> onRecord(List<String> state, Inbound<String> in) {
      switch (in.value()) {
        case "boom" -> throw new IllegalStateException("boom at " + in.offset());
        case "flaky" -> {
          if (FLAKY.computeIfAbsent(in.positionKey(), k -> new AtomicInteger()).incrementAndGet() < 3) {
            throw new RetriableException("not yet");
          }
          return Effects.persist("flaky");
        }
        case "call" -> {
          return Effects.call(key -> {
            CALLED_WITH.add(key);
            return "ok:" + key;
          }, outcome -> Effects.persist("called " + outcome));
        }
        case "pub" -> {
          return Effects.persist("pub").andPublish("out", "k", "v-" + in.offset());
        }
        default -> {
          return Effects.persist(in.value());
        }
      }
    }

    @Override
    protected List<String> applyEvent(List<String> state, String event) {
      List<String> next = new ArrayList<>(state);
      next.add(event);
      return List.copyOf(next);
    }
  }

  @Test
  void redeliveriesAfterACrashAreDroppedAndTheStateIsRecovered() {
    try (PartitionActorTestKit<String, List<String>, String> kit = PartitionActorTestKit.create(Words::new)) {
      PartitionActorTestKit.Result<List<String>, String> first = kit.send("a", "b", "c");
      assertEquals(3, first.applied());
      assertEquals(3, first.nextOffset());
      assertEquals(List.of("a", "b", "c"), first.events(), "the events this batch journaled");
      assertEquals(List.of("a", "b", "c"), first.state(), "the state after it");
      String before = kit.status().incarnation();
      kit.crash();
      assertNotEquals(before, kit.status().incarnation(), "a new incarnation recovered");
      assertEquals(List.of("a", "b", "c"), kit.state(), "recovered from the journal");
      PartitionActorTestKit.Result<List<String>, String> again = kit.redeliver(1);
      assertEquals(0, again.applied());
      assertEquals(2, again.droppedRedelivery());
      assertEquals(List.of(), again.events(), "a batch of redeliveries journals nothing");
      assertEquals(List.of("a", "b", "c"), kit.events(), "each record's effect once");
      assertEquals(3, kit.status().nextOffset().getAsLong());
    }
  }

  @Test
  void aReSentBusinessKeyIsDroppedAcrossSnapshotsAndCrashes() {
    try (PartitionActorTestKit<String, List<String>, String> kit =
        PartitionActorTestKit.create(Words::new, s -> s.withSnapshotEvery(1))) {
      kit.apply(List.of(kit.record("pay", Map.of("idempotency-key", "p-1"))));
      kit.send("x");
      kit.crash();
      PartitionActorTestKit.Result<List<String>, String> resend = kit.apply(List.of(kit.record("pay", Map.of("idempotency-key", "p-1"))));
      assertEquals(0, resend.applied());
      assertEquals(1, resend.droppedByKey());
      assertEquals(3, resend.nextOffset(), "the re-send's offset is passed");
      assertEquals(List.of("pay", "x"), kit.state());
    }
  }

  @Test
  void aFailedHandlerIsDeadLetteredInTheBatchsWriteAndRetriableFailuresAreRetried() {
    try (PartitionActorTestKit<String, List<String>, String> kit = PartitionActorTestKit.create(Words::new)) {
      PartitionActorTestKit.Result<List<String>, String> r = kit.send("a", "boom", "flaky", "b");
      assertEquals(3, r.applied());
      assertEquals(1, r.deadLettered().size());
      assertEquals(1, r.deadLettered().get(0).offset());
      assertEquals(IllegalStateException.class.getName(), r.deadLettered().get(0).errorClass());
      assertEquals("boom at 1", r.deadLettered().get(0).errorMessage());
      assertEquals(4, r.nextOffset());
      assertEquals(List.of("a", "flaky", "b"), kit.state());
      assertEquals(1, kit.journal().size(), "one journal write for the batch and its dead letter");
      assertEquals(List.of(1L), kit.deadLetters().stream().map(d -> d.offset()).toList());
    }
  }

  @Test
  void retriableFailuresPastTheLimitAreDeadLettered() {
    try (PartitionActorTestKit<String, List<String>, String> kit = PartitionActorTestKit.create(Words::new,
        s -> s, new PartitionId("g", "t", 3), 2)) {
      PartitionActorTestKit.Result<List<String>, String> r = kit.send("flaky");
      assertEquals(0, r.applied());
      assertEquals(2, r.deadLettered().get(0).attempts());
      assertEquals(RetriableException.class.getName(), r.deadLettered().get(0).errorClass());
    }
  }

  @Test
  void outboxRecordsAndExternalCallKeysAreJournaledOnceAndTheCallIsNotRepeatedOnRedelivery() {
    Words.CALLED_WITH.clear();
    try (PartitionActorTestKit<String, List<String>, String> kit = PartitionActorTestKit.create(Words::new)) {
      kit.send("pub", "call");
      kit.crash();
      kit.redeliver(0);
      assertEquals(1, kit.outbox().size());
      assertEquals("out", kit.outbox().get(0).topic());
      assertEquals("test-test-0-1", kit.calls().get(0).key(), "the record's stable position key");
      assertEquals("ok:test-test-0-1", kit.calls().get(0).outcome());
      assertEquals(List.of("test-test-0-1"), Words.CALLED_WITH, "called once");
      assertEquals(List.of("pub", "called ok:test-test-0-1"), kit.state());
    }
  }

  @Test
  void aRecordOfAnotherPartitionIsRefused() {
    try (PartitionActorTestKit<String, List<String>, String> kit = PartitionActorTestKit.create(Words::new)) {
      Inbound<String> other = Inbound.of(new PartitionId("test", "test", 1), 0, "a");
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> kit.apply(List.of(other)));
      assertTrue(e.getMessage().contains("sent to the kit's"), e.getMessage());
    }
  }

  @Test
  void withPerKeyOrderingLaterRecordsOfAFailedKeyAreParkedUntilItIsReplayed() {
    try (PartitionActorTestKit<String, List<String>, String> kit =
        PartitionActorTestKit.create(Words::new, s -> s.withPerKeyOrdering(true))) {
      List<Inbound<String>> batch = List.of(kit.record("K", "boom", Map.of()), kit.record("L", "a", Map.of()),
          kit.record("K", "b", Map.of()));
      PartitionActorTestKit.Result<List<String>, String> r = kit.apply(batch);
      assertEquals(1, r.applied());
      assertEquals(List.of(0L, 2L), r.deadLettered().stream().map(d -> d.offset()).toList());
      assertEquals(List.of(false, true), r.deadLettered().stream().map(d -> d.parked()).toList());
      assertEquals("key [K] is parked behind an earlier failed record; replay that one first",
          r.deadLettered().get(1).errorMessage());
      assertEquals(Optional.of("K"), r.deadLettered().get(1).key());
      assertEquals(List.of("a"), kit.state());
      assertEquals(3, kit.send("c").nextOffset() - 1, "the next record takes offset 3");
    }
  }

  @Test
  void forPipelineTakesThePipelinesSettingsButNeverItsJournal() {
    try (PartitionActorTestKit<String, List<String>, String> kit =
        PartitionActorTestKit.forPipeline(Words::new, "kit-test")) {
      assertEquals(new PartitionId("kit-group", "kit-topic", 0), kit.partition());
      PartitionActorTestKit.Result<List<String>, String> r = kit.send("flaky", "a");
      assertEquals(2, r.deadLettered().get(0).attempts(), "the pipeline's handler-retry.max-attempts");
      kit.crash();
      assertEquals(List.of("a"), kit.state(), "journaled in memory, recovered from it");
    }
  }

  @Test
  void rawBytesGoThroughTheDeserializerAndWhatItRefusesIsDeadLettered() {
    try (PartitionActorTestKit<String, List<String>, String> kit = PartitionActorTestKit.create(Words::new)) {
      PartitionActorTestKit.Result<List<String>, String> result = kit.sendBytes(JsonDeserializer.of(String.class),
          "\"a\"".getBytes(StandardCharsets.UTF_8),
          "{not json".getBytes(StandardCharsets.UTF_8),
          "\"b\"".getBytes(StandardCharsets.UTF_8));
      assertEquals(2, result.applied());
      assertEquals(1, result.deadLettered().size());
      DeadLetter unreadable = result.deadLettered().get(0);
      assertEquals(1, unreadable.offset());
      assertEquals("org.apache.kafka.common.errors.SerializationException", unreadable.errorClass());
      assertTrue(unreadable.errorMessage().startsWith("not valid JSON for String on topic ["
          + kit.partition().topic() + "]"), unreadable.errorMessage());
      assertEquals(List.of("a", "b"), kit.state());
      assertEquals(List.of(1L), kit.deadLetters().stream().map(d -> d.offset()).toList(), "journaled as a dead letter");
      assertEquals(3, result.nextOffset());
    }
  }

  @Test
  void failedJournalWritesAreResentAndApplyTheBatchOnce() {
    try (PartitionActorTestKit<String, List<String>, String> kit = PartitionActorTestKit.create(Words::new)) {
      kit.send("a");
      kit.failNextWrites(2);
      PartitionActorTestKit.Result<List<String>, String> r = kit.send("b", "c");
      assertEquals(2, r.resends(), "sent again after each failed write");
      assertEquals(2, r.applied());
      assertEquals(List.of("b", "c"), r.events());
      assertEquals(List.of("a", "b", "c"), kit.events(), "each record's effect once");
      assertEquals(3, r.nextOffset());
    }
  }
}
