package io.fencepost.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import io.fencepost.FencepostMeters;
import io.fencepost.PartitionId;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.search.Search;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetCommitCallback;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The ownership state machine against Kafka's {@link MockConsumer} and fakes of its collaborators
 * (actors, start offsets, batches, relays), in seconds: each test drives the group's decisions on
 * the consumer thread (poll tasks) and checks what the machine did, and in which order, in one
 * event list.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class PartitionOwnershipTest {

  private static final ActorTestKit kit = ActorTestKit.create();
  private static final String TOPIC = "t";
  private static final TopicPartition P0 = new TopicPartition(TOPIC, 0);
  private static final PartitionId ID0 = new PartitionId("g", TOPIC, 0);

  /** What the machine did, in order: "admit 0", "seek-target 0", "deliver 0 [3..7]", "stop 0", ... */
  private final List<String> events = new CopyOnWriteArrayList<>();
  private final Fakes fakes = new Fakes();
  private final List<TestConsumer> consumers = new CopyOnWriteArrayList<>();
  /** The machine's clock: stands still unless a test moves it. */
  private final ManualTicker ticker = new ManualTicker(1_000_000_000_000L);
  private PartitionOwnership ownership;

  /** The machine's meters (every test's partitions: compare before and after). */
  private static final SimpleMeterRegistry meters = new SimpleMeterRegistry();

  @BeforeAll
  static void meters() {
    FencepostMeters.get(kit.system()).use(meters);
  }

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  private static double restarts(String cause) {
    return Search.in(meters).name("fencepost.partition.restarts").tag("cause", cause).counters().stream()
        .mapToDouble(Counter::count).sum();
  }

  @AfterEach
  void stop() throws Exception {
    if (ownership != null) {
      ownership.stop().toCompletableFuture().get(20, TimeUnit.SECONDS);
    }
  }

  /**
   * A MockConsumer that hands its listener out, keeps every commit (its own {@code committed} says 0
   * for a partition no longer assigned), and does not spin when there is nothing to poll.
   */
  static final class TestConsumer extends MockConsumer<byte[], byte[]> {
    volatile ConsumerRebalanceListener listener;
    final Map<TopicPartition, Long> commits = new ConcurrentHashMap<>();

    TestConsumer() {
      super(OffsetResetStrategy.EARLIEST);
      updateBeginningOffsets(Map.of(P0, 0L, new TopicPartition(TOPIC, 1), 0L));
    }

    @Override
    public synchronized void subscribe(Collection<String> topics, ConsumerRebalanceListener listener) {
      this.listener = listener;
      super.subscribe(topics, listener);
    }

    @Override
    public ConsumerRecords<byte[], byte[]> poll(Duration timeout) {
      ConsumerRecords<byte[], byte[]> records = super.poll(timeout);
      if (records.isEmpty()) {
        try {
          Thread.sleep(2);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return records;
    }

    @Override
    public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
      offsets.forEach((tp, o) -> commits.put(tp, o.offset()));
      super.commitSync(offsets, timeout);
    }

    @Override
    public synchronized void commitAsync(Map<TopicPartition, OffsetAndMetadata> offsets, OffsetCommitCallback callback) {
      offsets.forEach((tp, o) -> commits.put(tp, o.offset()));
      super.commitAsync(offsets, callback);
    }

    /**
     * Without MockConsumer's lock (held by a poll task that waits in the listener): a stream thread
     * posting work must not block on it. Posted work still runs at the loop's next turn.
     */
    @Override
    public void wakeup() {
    }

    /** Runs {@code task} on the consumer thread, inside a later poll. */
    void onConsumerThread(Runnable task) {
      schedulePollTask(task);
    }
  }

  /** The collaborators: every call is an event; start offsets and batches can be held by the test. */
  final class Fakes implements OwnershipSeams.Actors, OwnershipSeams.StartOffsets, OwnershipSeams.Batches {
    /** The next seek target per partition (the actor's stored next offset). */
    final Map<Integer, Long> stored = new ConcurrentHashMap<>();
    /** When set for a partition, its seek targets wait for this future. */
    final Map<Integer, CompletableFuture<Long>> heldTargets = new ConcurrentHashMap<>();
    /** When set for a partition, its batches wait for this future (a batch in flight). */
    final Map<Integer, CompletableFuture<OptionalLong>> heldBatches = new ConcurrentHashMap<>();
    /** The progress object of each delivered batch, in order. */
    final List<PartitionProgress> deliveredFor = new CopyOnWriteArrayList<>();

    @Override
    public void admit(PartitionId id) {
      events.add("admit " + id.partition());
    }

    @Override
    public CompletionStage<Done> stop(PartitionId id) {
      events.add("stop " + id.partition());
      return CompletableFuture.completedFuture(Done.getInstance());
    }

    @Override
    public CompletionStage<Long> seekTarget(PartitionId id, PartitionProgress progress, BooleanSupplier wanted) {
      events.add("seek-target " + id.partition());
      CompletableFuture<Long> held = heldTargets.get(id.partition());
      return held != null ? held : CompletableFuture.completedFuture(stored.getOrDefault(id.partition(), 0L));
    }

    @Override
    public CompletionStage<OptionalLong> deliver(PartitionId id, PartitionProgress progress,
        List<ConsumerRecord<byte[], byte[]>> batch) {
      long first = batch.get(0).offset();
      long last = batch.get(batch.size() - 1).offset();
      deliveredFor.add(progress);
      events.add("deliver " + id.partition() + " [" + first + ".." + last + "]");
      CompletableFuture<OptionalLong> held = heldBatches.get(id.partition());
      CompletableFuture<OptionalLong> applied = held != null ? held : CompletableFuture.completedFuture(OptionalLong.of(last + 1));
      return applied.whenComplete((next, e) -> events.add("applied " + id.partition() + " [" + first + ".." + last + "]"));
    }

    final OwnershipSeams.Relays relays = new OwnershipSeams.Relays() {
      @Override
      public void start(PartitionId id) {
        events.add("relay-start " + id.partition());
      }

      @Override
      public void stop(PartitionId id) {
        events.add("relay-stop " + id.partition());
      }
    };
  }

  private PartitionOwnership start(Duration drainTimeout) {
    return start(drainTimeout, Map.of());
  }

  private PartitionOwnership start(Duration drainTimeout, Map<String, Object> consumerProperties) {
    PipelineSettings base = PipelineSettings.create(kit.system(), "ownership-test");
    PipelineSettings settings = base
        .withBootstrapServers("unused:9092").withTopics(List.of(TOPIC)).withGroupId("g")
        .withBatch(5, Duration.ofMillis(200))
        .withRetryBackoff(base.retryBackoff().withMin(Duration.ofMillis(10)).withMax(Duration.ofMillis(50)))
        .withDrainTimeout(drainTimeout)
        .withCommit(base.commit().withMaxBatch(1_000_000).withMaxInterval(Duration.ofHours(1)));
    KafkaClients clients = properties -> {
      TestConsumer c = new TestConsumer();
      consumers.add(c);
      return c;
    };
    ownership = new PartitionOwnership(kit.system(), settings, consumerProperties, clients,
        new OwnershipSeams(fakes, fakes, fakes, fakes.relays, ticker));
    ownership.start();
    return ownership;
  }

  private TestConsumer consumer() {
    return consumers.get(consumers.size() - 1);
  }

  /** The group's decision, on the consumer thread; returns once it has been handled. */
  private void rebalance(TestConsumer c, List<TopicPartition> assignment) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    c.onConsumerThread(() -> {
      c.rebalance(assignment);
      done.complete(null);
    });
    await(done::isDone, "the rebalance to " + assignment + " handled");
  }

  /** Returns once the consumer thread has finished everything scheduled before (a later poll ran). */
  private void settle(TestConsumer c) {
    CompletableFuture<Void> turned = new CompletableFuture<>();
    c.onConsumerThread(() -> turned.complete(null));
    await(turned::isDone, "a turn of the consumer thread");
    CompletableFuture<Void> again = new CompletableFuture<>();
    c.onConsumerThread(() -> again.complete(null));
    await(again::isDone, "a second turn of the consumer thread");
  }

  /**
   * Adds the records as one step: MockConsumer's poll and addRecord lock the consumer, and a poll
   * between two additions would return the first ones and drop the rest of its list, after which
   * records added later come back from whatever position, unlike a broker's log after a seek.
   */
  private static void addRecords(TestConsumer c, TopicPartition tp, long from, long to) {
    synchronized (c) {
      for (long o = from; o <= to; o++) {
        c.addRecord(new ConsumerRecord<>(tp.topic(), tp.partition(), o, new byte[0], new byte[] {(byte) o}));
      }
    }
  }

  private static void await(BooleanSupplier condition, String what) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within 10 s: " + what);
      }
      try {
        Thread.sleep(2);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }

  private Supplier<String> eventsText() {
    return () -> String.join(", ", events);
  }

  private boolean happened(String event) {
    return events.contains(event);
  }

  private int count(String regex) {
    Pattern p = Pattern.compile(regex);
    return (int) events.stream().filter(e -> p.matcher(e).matches()).count();
  }

  /** The offsets of partition {@code p} whose batches were applied, from the event at {@code since} on. */
  private Set<Long> applied(int p, int since) {
    Set<Long> out = new TreeSet<>();
    Pattern applied = Pattern.compile("applied " + p + " \\[(\\d+)\\.\\.(\\d+)\\]");
    for (String e : events.subList(since, events.size())) {
      Matcher m = applied.matcher(e);
      if (m.matches()) {
        for (long o = Long.parseLong(m.group(1)); o <= Long.parseLong(m.group(2)); o++) {
          out.add(o);
        }
      }
    }
    return out;
  }

  /** Waits until offsets {@code from..to} of partition {@code p} were applied (in any batches) since event {@code since}. */
  private void awaitApplied(int p, long from, long to, int since) {
    Set<Long> wanted = LongStream.rangeClosed(from, to).boxed()
        .collect(Collectors.toCollection(TreeSet::new));
    await(() -> applied(p, since).containsAll(wanted), "offsets " + from + ".." + to + " of partition " + p
        + " applied; events: " + events);
  }

  private int firstIndex(String prefix) {
    for (int i = 0; i < events.size(); i++) {
      if (events.get(i).startsWith(prefix)) {
        return i;
      }
    }
    throw new AssertionError("no [" + prefix + "...] in " + events);
  }

  private int lastIndex(String prefix) {
    for (int i = events.size() - 1; i >= 0; i--) {
      if (events.get(i).startsWith(prefix)) {
        return i;
      }
    }
    throw new AssertionError("no [" + prefix + "...] in " + events);
  }

  private int indexOf(String event) {
    int i = events.indexOf(event);
    assertTrue(i >= 0, "no [" + event + "] in " + events);
    return i;
  }

  @Test
  void anAssignedPartitionIsPausedUntilItSeeksToItsStoredOffsetAndNothingBelowItIsDelivered() {
    CompletableFuture<Long> target = new CompletableFuture<>();
    fakes.heldTargets.put(0, target);
    start(Duration.ofSeconds(5));
    TestConsumer c = consumer();
    rebalance(c, List.of(P0));
    addRecords(c, P0, 0, 9);
    settle(c);
    assertEquals(Set.of(P0), c.paused(), "paused while its actor has not told its stored offset");
    assertEquals(List.of("admit 0", "seek-target 0"), events);

    target.complete(5L);
    awaitApplied(0, 5, 9, 0);
    assertEquals(10, c.position(P0), "read on from the stored offset");
    assertEquals(List.of("admit 0", "seek-target 0", "relay-start 0"), events.subList(0, 3));
    assertEquals(Set.of(5L, 6L, 7L, 8L, 9L), applied(0, 0), "nothing below the stored offset reached a stream");
    assertEquals(Set.of(), c.paused());
  }

  @Test
  void everyAgeOfAnAssignmentIsReadFromThePipelinesClock() {
    Duration stall = Duration.ofSeconds(60);
    CompletableFuture<Long> target = new CompletableFuture<>();
    fakes.heldTargets.put(0, target);
    CompletableFuture<OptionalLong> inFlight = new CompletableFuture<>();
    fakes.heldBatches.put(0, inFlight);
    start(Duration.ofSeconds(5));
    TestConsumer c = consumer();
    rebalance(c, List.of(P0));
    PartitionProgress p = ownership.assigned().get(ID0);
    assertEquals(0, ownership.sinceAssignmentChangedNanos(), "the clock stood still since the assignment");

    ticker.advance(Duration.ofSeconds(59));
    assertFalse(p.stalled(stall, ticker.nanoTime()), "recovering for 59 s");
    assertEquals(Duration.ofSeconds(59).toNanos(), ownership.sinceAssignmentChangedNanos());
    ticker.advance(Duration.ofSeconds(2));
    assertTrue(p.stalled(stall, ticker.nanoTime()), "its actor has not told its offset for 61 s");
    assertEquals(Duration.ofSeconds(61).toNanos(), p.stuckNanos(ticker.nanoTime()));

    target.complete(0L);
    await(() -> p.flowing, "seeked");
    assertEquals(0, p.stuckNanos(ticker.nanoTime()), "flowing and idle since the seek");
    assertEquals(ticker.nanoTime(), p.lastProgressNanos, "the watchdog's no-progress time counts from the seek, "
        + "not from the 61 s of recovery");
    ticker.advance(Duration.ofSeconds(30));
    addRecords(c, P0, 0, 4);
    await(() -> count("deliver 0 .*") > 0, "a batch sent");
    ticker.advance(Duration.ofSeconds(45));
    assertEquals(Duration.ofSeconds(45).toNanos(), p.stuckNanos(ticker.nanoTime()),
        "busy since its records came, not since the seek 75 s ago");
    ticker.advance(Duration.ofSeconds(16));
    assertTrue(p.stalled(stall, ticker.nanoTime()), "records held for 61 s");
    inFlight.complete(OptionalLong.of(5));
    awaitApplied(0, 0, 4, 0);
    await(() -> p.buffered.get() == 0, "the batch through");
    assertFalse(p.stalled(stall, ticker.nanoTime()), "nothing held once the batch was through");
  }

  @Test
  void aRevokedPartitionWaitsForItsBatchInFlightThenStopsItsActorAndCommits() {
    CompletableFuture<OptionalLong> inFlight = new CompletableFuture<>();
    fakes.heldBatches.put(0, inFlight);
    start(Duration.ofSeconds(10));
    TestConsumer c = consumer();
    rebalance(c, List.of(P0));
    addRecords(c, P0, 0, 4);
    await(() -> count("deliver 0 .*") > 0, "a batch sent");

    c.onConsumerThread(() -> c.rebalance(List.of()));   // the listener waits for the batch
    await(() -> happened("relay-stop 0"), "the revocation under way");
    // (Not a MockConsumer call here: the consumer thread holds its lock while the listener waits.)
    assertFalse(happened("stop 0"), "the actor must not stop while its batch is in flight: " + events);

    inFlight.complete(OptionalLong.of(5));
    await(() -> happened("stop 0"), "the actor stopped");
    assertTrue(lastIndex("applied 0") < indexOf("stop 0"), "batches applied before the actor stops: " + events);
    await(() -> c.commits.containsKey(P0), "the applied offset committed");
    assertEquals(Map.of(P0, 5L), c.commits);
    assertEquals(Map.of(), ownership.assigned());
  }

  @Test
  void lostPartitionsAreLetGoWithoutACommitAndTheConsumerIsOutOfItsGroupUntilItsNextAssignment() {
    start(Duration.ofSeconds(5));
    TestConsumer c = consumer();
    rebalance(c, List.of(P0));
    assertTrue(ownership.joined());
    addRecords(c, P0, 0, 4);
    awaitApplied(0, 0, 4, 0);

    CompletableFuture<Void> lost = new CompletableFuture<>();
    c.onConsumerThread(() -> {
      c.listener.onPartitionsLost(List.of(P0));
      lost.complete(null);
    });
    await(lost::isDone, "the loss handled");
    assertTrue(happened("relay-stop 0") && happened("stop 0"), eventsText().get());
    assertFalse(ownership.joined(), "a consumer that lost its partitions left its group");
    assertEquals(Map.of(), ownership.assigned());
    settle(c);
    assertEquals(Map.of(), c.commits, "no commit for partitions another owner may hold");

    rebalance(c, List.of());   // the next assignment (empty): back in the group
    assertTrue(ownership.joined());
  }

  @Test
  void aPartitionAssignedAgainAsksForItsStartOnlyAfterThePreviousStreamEnded() {
    CompletableFuture<OptionalLong> inFlight = new CompletableFuture<>();
    fakes.heldBatches.put(0, inFlight);
    start(Duration.ofMillis(100));   // the revocation abandons the batch after 100 ms
    TestConsumer c = consumer();
    rebalance(c, List.of(P0));
    addRecords(c, P0, 0, 4);
    await(() -> count("deliver 0 .*") > 0, "a batch sent");

    rebalance(c, List.of());
    fakes.heldBatches.remove(0);
    fakes.stored.put(0, 5L);
    rebalance(c, List.of(P0));
    settle(c);
    assertEquals(2, count("admit 0"), eventsText().get());
    assertEquals(1, count("seek-target 0"), "the new assignment waits for the previous stream: " + events);

    inFlight.complete(OptionalLong.of(5));
    await(() -> count("seek-target 0") == 2, "the new assignment prepared");
    assertTrue(firstIndex("applied 0") < events.lastIndexOf("seek-target 0"), eventsText().get());
    int mark = events.size();
    addRecords(c, P0, 5, 7);
    awaitApplied(0, 5, 7, mark);
    assertNotSame(fakes.deliveredFor.get(0), fakes.deliveredFor.get(1), "a new assignment, a new progress");
  }

  @Test
  void aHaltedPartitionStaysPausedAndIsNotRestartedUntilItIsAssignedAgain() {
    start(Duration.ofSeconds(5));
    TestConsumer c = consumer();
    rebalance(c, List.of(P0));
    addRecords(c, P0, 0, 4);
    awaitApplied(0, 0, 4, 0);
    PartitionProgress progress = ownership.assigned().get(ID0);

    ownership.halt(ID0, progress, "its actor cannot go on", "test");
    await(() -> c.paused().contains(P0), "the halted partition paused");
    ownership.restart(ID0, progress, "stall", "stalled");
    settle(c);
    assertEquals(1, count("seek-target 0"), "a halted partition is not restarted: " + events);
    assertSame(progress, ownership.assigned().get(ID0), "its assignment did not end");
    assertFalse(progress.revoked);
    assertTrue(c.paused().contains(P0));

    rebalance(c, List.of());
    rebalance(c, List.of(P0));
    await(() -> count("seek-target 0") == 2, "assigned again: prepared again");
    await(() -> !c.paused().contains(P0), "assigned again: flowing");
  }

  @Test
  void aStallRestartSeeksToTheStoredOffsetWithANewStreamAfterTheOldOneEnded() {
    start(Duration.ofSeconds(5));
    TestConsumer c = consumer();
    rebalance(c, List.of(P0));
    addRecords(c, P0, 0, 4);
    awaitApplied(0, 0, 4, 0);
    PartitionProgress first = ownership.assigned().get(ID0);

    fakes.stored.put(0, 3L);   // say the actor stored less than was read
    double stallRestarts = restarts("stall");
    ownership.restart(ID0, first, "stall", "no progress");
    await(() -> count("seek-target 0") == 2, "prepared again");
    await(() -> !c.paused().contains(P0) && count("relay-start 0") == 2, "flowing again");
    assertTrue(first.revoked, "the old assignment ended");
    assertNotSame(first, ownership.assigned().get(ID0));
    assertEquals(3, c.position(P0), "seeked to the stored offset");
    int mark = events.size();
    addRecords(c, P0, 3, 6);
    awaitApplied(0, 3, 6, mark);
    PartitionProgress second = ownership.assigned().get(ID0);
    assertSame(second, fakes.deliveredFor.get(fakes.deliveredFor.size() - 1));

    ownership.restart(ID0, first, "stall", "a late restart of the old assignment");
    settle(c);
    assertEquals(2, count("seek-target 0"), "a stale assignment's restart is ignored: " + events);
    assertEquals(stallRestarts + 1, restarts("stall"), "one restart counted, the ignored one not");
    assertSame(second, ownership.assigned().get(ID0), "the current assignment goes on");
    assertFalse(second.revoked);
  }

  @Test
  void aFullStreamPausesItsPartitionAndReadsOnFromTheFirstRecordItDidNotTake() {
    CompletableFuture<OptionalLong> held = new CompletableFuture<>();
    fakes.heldBatches.put(0, held);
    // Its queue holds 15 (high water 10 + max.poll.records 5). MockConsumer returns all 30 records in
    // one poll; while they are offered, the stream may take some out of the queue (a batch of 5 in
    // flight, a group of 5 forming), so 15 to 25 are taken.
    start(Duration.ofSeconds(5), Map.of("max.poll.records", "5"));
    TestConsumer c = consumer();
    rebalance(c, List.of(P0));
    await(() -> happened("relay-start 0") && !c.paused().contains(P0), "flowing");
    addRecords(c, P0, 0, 29);
    await(() -> c.paused().contains(P0), "paused: its stream is full");
    long readOnFrom = c.position(P0);
    assertEquals(readOnFrom, ownership.assigned().get(ID0).buffered.get(),
        "seeked back to the first record not taken: every record below it is in the stream");
    assertTrue(readOnFrom >= 15 && readOnFrom <= 25, "the queue's 15, and at most a batch and a group more: "
        + readOnFrom);

    fakes.heldBatches.remove(0);
    held.complete(OptionalLong.of(5));
    await(() -> !c.paused().contains(P0), "resumed once its stream drained");
    addRecords(c, P0, readOnFrom, 29);   // what the broker would return from there
    awaitApplied(0, 0, 29, 0);
    List<Long> each = new ArrayList<>();
    events.stream().filter(e -> e.startsWith("applied 0 ")).forEach(e -> {
      String[] range = e.substring(e.indexOf('[') + 1, e.indexOf(']')).split("\\.\\.");
      for (long o = Long.parseLong(range[0]); o <= Long.parseLong(range[1]); o++) {
        each.add(o);
      }
    });
    assertEquals(LongStream.range(0, 30).boxed().toList(), each, "every offset once, in order");
  }

  @Test
  void aStartOffsetArrivingForAnAssignmentThatEndedMeanwhileIsIgnored() {
    CompletableFuture<Long> late = new CompletableFuture<>();
    fakes.heldTargets.put(0, late);
    start(Duration.ofSeconds(5));
    TestConsumer c = consumer();
    rebalance(c, List.of(P0));
    await(() -> count("seek-target 0") == 1, "the first assignment asks where to start");
    PartitionProgress first = ownership.assigned().get(ID0);

    CompletableFuture<Long> current = new CompletableFuture<>();
    fakes.heldTargets.put(0, current);
    ownership.restart(ID0, first, "stall", "restarted before it flowed");
    await(() -> count("seek-target 0") == 2, "the next assignment asks too");
    late.complete(0L);   // the first assignment's answer, after it ended
    settle(c);
    assertEquals(0, count("relay-start 0"), "no stream for an ended assignment: " + events);
    assertTrue(c.paused().contains(P0));

    current.complete(5L);
    await(() -> count("relay-start 0") == 1, "the current assignment flows");
    assertEquals(5, c.position(P0));
  }

  @Test
  void aFailedConsumerIsReplacedAndItsPartitionsAreLetGoAndAssignedAfresh() {
    start(Duration.ofSeconds(5));
    TestConsumer c = consumer();
    rebalance(c, List.of(P0));
    addRecords(c, P0, 0, 4);
    awaitApplied(0, 0, 4, 0);

    c.setPollException(new KafkaException("broker gone"));
    await(() -> consumers.size() == 2, "a new consumer");
    assertTrue(c.closed(), "the failed consumer closed");
    assertTrue(happened("relay-stop 0") && happened("stop 0"), eventsText().get());
    assertEquals(Map.of(), ownership.assigned());

    TestConsumer next = consumer();
    await(() -> next.listener != null, "the new consumer subscribed");
    fakes.stored.put(0, 5L);
    rebalance(next, List.of(P0));
    int mark = events.size();
    addRecords(next, P0, 5, 6);
    awaitApplied(0, 5, 6, mark);
    assertNull(ownership.consumerFailure());
    List<String> admits = new ArrayList<>(events.stream().filter(e -> e.startsWith("admit")).toList());
    assertEquals(List.of("admit 0", "admit 0"), admits);
  }
}
