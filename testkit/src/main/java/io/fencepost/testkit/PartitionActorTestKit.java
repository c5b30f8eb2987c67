package io.fencepost.testkit;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.AppliedBatch;
import io.fencepost.AppliedView;
import io.fencepost.BatchOutcome;
import io.fencepost.DeadLetter;
import io.fencepost.Inbound;
import io.fencepost.OutboxRecord;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionActorSettings;
import io.fencepost.PartitionCommand;
import io.fencepost.PartitionContext;
import io.fencepost.PartitionId;
import io.fencepost.PartitionStatus;
import io.fencepost.Query;
import io.fencepost.errors.HandlerFailedException;
import io.fencepost.errors.RecordsParkedException;
import io.fencepost.errors.RetriableException;
import io.fencepost.FailedRecords;
import io.fencepost.kafka.PipelineSettings;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.PersistenceTestKitPlugin;
import org.apache.pekko.persistence.testkit.PersistenceTestKitSnapshotPlugin;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.serialization.Serializers;

/**
 * Unit tests for a {@link PartitionActor} without a broker or a database: the actor runs as in
 * production (same behavior, same journal writes, same recovery), on Pekko's in-memory journal and
 * snapshot store, and the kit plays the pipeline's part. Feed records, redeliver them, re-send a
 * business key, crash and recover, then assert the effects: state, journaled events, dropped
 * records, dead letters, outbox records and external-call keys. {@link #forPipeline} takes the
 * settings a pipeline of the service would give the actor.
 *
 * <pre>{@code
 * try (PartitionActorTestKit<Payment, Ledger, Credited> kit = PartitionActorTestKit.create(LedgerActor::new)) {
 *   kit.send(new Payment("p-1", "m-1", 500));
 *   kit.crash();
 *   kit.redeliver(0);                                   // the broker redelivers offset 0
 *   assertEquals(1, kit.events().size());
 *   assertEquals(500L, kit.state().balances().get("m-1"));
 * }
 * }</pre>
 *
 * <p>Like the pipeline, the kit retries a handler that throws a
 * {@link io.fencepost.errors.RetriableException} (at once, up to {@code maxHandlerAttempts} attempts
 * in all) and dead-letters a record whose handler failed for good, in the same journal write as the
 * rest of its batch; a dead letter is recorded, not published. Records are numbered from offset 0 in
 * the order they are first sent. The kit's actor system reads the service's {@code application.conf}
 * (its serializers, its {@code fencepost.partition-actor} settings) but runs without remoting or
 * cluster, so it never binds the service's ports.
 *
 * @param <V> the record values
 * @param <S> the actor's state
 * @param <E> the actor's events
 */
public final class PartitionActorTestKit<V, S, E> implements AutoCloseable {

  private static final Duration TIMEOUT = Duration.ofSeconds(10);
  /** With a journal failure injected: how long a batch waits for its answer before it is sent again. */
  private static final Duration RESEND_AFTER = Duration.ofSeconds(2);
  private static final AtomicInteger SYSTEMS = new AtomicInteger();

  private final ActorTestKit kit;
  private final PersistenceTestKit journal;
  /** Journal write failures injected and not yet seen as an unanswered send. */
  private int failingWrites;
  private final PartitionId partition;
  private final PartitionActorSettings settings;
  private final Function<PartitionContext, ? extends PartitionActor<V, S, E>> factory;
  private final int maxHandlerAttempts;
  /** Every record sent, by offset: what {@link #redeliver} sends again. */
  private final TreeMap<Long, Inbound<V>> sent = new TreeMap<>();
  private ActorRef<PartitionCommand> actor;
  /** The journaled state the live incarnation published last (what queries are answered from). */
  private AtomicReference<AppliedView> views;
  private int incarnations;
  /** The offset the next new record takes. */
  private long nextOffset;

  private PartitionActorTestKit(Function<PartitionContext, ? extends PartitionActor<V, S, E>> factory,
      PartitionId partition, Function<Config, PartitionActorSettings> settings, int maxHandlerAttempts) {
    this.factory = Objects.requireNonNull(factory, "factory");
    this.partition = Objects.requireNonNull(partition, "partition");
    if (maxHandlerAttempts < 1) {
      throw new IllegalArgumentException("maxHandlerAttempts must be >= 1, was " + maxHandlerAttempts);
    }
    this.maxHandlerAttempts = maxHandlerAttempts;
    Config config = ConfigFactory.parseString("pekko.actor.provider = local\n"
            + "pekko.coordinated-shutdown.exit-jvm = off\n"
            + "fencepost.partition-actor.journal-plugin-id = \"\"\n"
            + "fencepost.partition-actor.snapshot-plugin-id = \"\"\n"
            + "fencepost.partition-actor.journal-databases = 1\n")
        .withFallback(PersistenceTestKitPlugin.getInstance().config())
        .withFallback(PersistenceTestKitSnapshotPlugin.config())
        .withFallback(ConfigFactory.load());
    this.kit = ActorTestKit.create("partition-actor-test-kit-" + SYSTEMS.incrementAndGet(), config);
    this.journal = PersistenceTestKit.create(kit.system());
    this.settings = settings.apply(kit.system().settings().config());
    this.actor = start();
  }

  /**
   * A kit for the actor {@code factory} makes (e.g. {@code LedgerActor::new}), with the settings of
   * {@code fencepost.partition-actor} and partition 0 of topic {@code test} in group {@code test}.
   */
  public static <V, S, E> PartitionActorTestKit<V, S, E> create(
      Function<PartitionContext, ? extends PartitionActor<V, S, E>> factory) {
    return create(factory, s -> s);
  }

  /**
   * A kit whose actor settings are adjusted first, e.g.
   * {@code s -> s.withKeyWindow(true, 100, Duration.ofHours(1))} or {@code s -> s.withSnapshotEvery(2)}.
   */
  public static <V, S, E> PartitionActorTestKit<V, S, E> create(
      Function<PartitionContext, ? extends PartitionActor<V, S, E>> factory,
      Function<PartitionActorSettings, PartitionActorSettings> settings) {
    return create(factory, settings, new PartitionId("test", "test", 0), 5);
  }

  /**
   * A kit for one given partition, retrying retriable handler failures up to
   * {@code maxHandlerAttempts} attempts in all (the pipeline's {@code handler-retry.max-attempts}).
   */
  public static <V, S, E> PartitionActorTestKit<V, S, E> create(
      Function<PartitionContext, ? extends PartitionActor<V, S, E>> factory,
      Function<PartitionActorSettings, PartitionActorSettings> settings, PartitionId partition,
      int maxHandlerAttempts) {
    return new PartitionActorTestKit<>(factory, partition, config -> settings.apply(PartitionActorSettings.create(config)),
        maxHandlerAttempts);
  }

  /**
   * A kit with the settings a pipeline of your service would give its actors: pipeline
   * {@code pipelineName}'s {@code partition-actor} section (falling back to
   * {@code fencepost.partition-actor}) and its {@code handler-retry.max-attempts}, from your
   * {@code application.conf}; partition 0 of the pipeline's first topic, in its group.
   */
  public static <V, S, E> PartitionActorTestKit<V, S, E> forPipeline(
      Function<PartitionContext, ? extends PartitionActor<V, S, E>> factory, String pipelineName) {
    PipelineSettings pipeline = PipelineSettings.create(ConfigFactory.load(), pipelineName);
    PartitionId partition = new PartitionId(pipeline.groupId(),
        pipeline.topics().isEmpty() ? "test" : pipeline.topics().get(0), 0);
    return new PartitionActorTestKit<>(factory, partition,
        // The pipeline's own journal or snapshot plugin, if it names one, is replaced by the kit's in-memory ones.
        config -> PipelineSettings.create(ConfigFactory.parseString(
                "fencepost.pipelines.\"" + pipelineName + "\".partition-actor { journal-plugin-id = \"\", "
                    + "snapshot-plugin-id = \"\", journal-databases = 1 }").withFallback(config), pipelineName).partitionActor(),
        pipeline.handlerRetry().maxAttempts());
  }

  private ActorRef<PartitionCommand> start() {
    AtomicReference<AppliedView> views = new AtomicReference<>();
    this.views = views;
    return kit.spawn(PartitionActor.behavior(partition, settings, factory, views::set), "partition-" + (++incarnations));
  }

  /** The partition the actor owns. */
  public PartitionId partition() {
    return partition;
  }

  /** The offset the next new record gets. */
  public long nextNewOffset() {
    return nextOffset;
  }

  /** A new record at the next offset, without key or headers (not sent yet). */
  public Inbound<V> record(V value) {
    return record(value, Map.of());
  }

  /**
   * A new record with a Kafka key at the next offset (not sent yet): the key dead letters carry and
   * per-key ordering parks by.
   */
  public Inbound<V> record(String key, V value, Map<String, String> headers) {
    Inbound<V> r = record(value, headers);
    return new Inbound<>(partition, r.offset(), Optional.of(key), value, r.headers(), r.timestamp());
  }

  /**
   * A new record at the next offset with headers (not sent yet), e.g.
   * {@code Map.of("idempotency-key", "p-1")} for a business key read from the default header. Each
   * record made takes the next offset, as the broker numbers what producers send: send them in the
   * order they were made (a record made and never sent leaves a hole the actor refuses to skip).
   */
  public Inbound<V> record(V value, Map<String, String> headers) {
    Map<String, byte[]> raw = new LinkedHashMap<>();
    headers.forEach((k, v) -> raw.put(k, v.getBytes(StandardCharsets.UTF_8)));
    return new Inbound<>(partition, nextOffset++, Optional.empty(), value, raw, Instant.now());
  }

  /** Sends each value as a new record, all in one batch (one journal write). */
  @SafeVarargs
  public final Result<S, E> send(V... values) {
    List<Inbound<V>> batch = new ArrayList<>();
    for (V v : values) {
      batch.add(record(v));
    }
    return apply(batch);
  }

  /**
   * Sends raw record values as one batch through {@code deserializer}, as the pipeline reads them: a
   * value the deserializer refuses (it throws, e.g. a {@code SerializationException}) is
   * dead-lettered at its offset with that exception's class and message; the others are applied.
   */
  public Result<S, E> sendBytes(Deserializer<V> deserializer, byte[]... values) {
    List<Inbound<V>> batch = new ArrayList<>();
    List<DeadLetter> unreadable = new ArrayList<>();
    for (byte[] value : values) {
      long offset = nextOffset++;
      try {
        V v = deserializer.deserialize(partition.topic(), new RecordHeaders(),
            value);
        batch.add(new Inbound<>(partition, offset, Optional.empty(), v, Map.of(), Instant.now()));
      } catch (RuntimeException e) {
        unreadable.add(new DeadLetter(partition, offset, Optional.empty(), e.getClass().getName(),
            String.valueOf(e.getMessage()), 1, false, OptionalLong.empty()));
      }
    }
    return apply(batch, unreadable);
  }

  /**
   * Applies records as one batch, the way the pipeline does: retriable handler failures retried,
   * failed records dead-lettered, parked records dead-lettered as parked. Records must follow the
   * offsets sent so far (a record made with {@link #record} and sent now, or one sent before).
   *
   * @throws AssertionError if the actor rejects the batch for another reason (e.g. it halted)
   */
  public Result<S, E> apply(List<Inbound<V>> records) {
    return apply(records, List.of());
  }

  @SuppressWarnings("unchecked")
  private Result<S, E> apply(List<Inbound<V>> records, List<DeadLetter> unreadable) {
    List<Inbound<?>> batch = new ArrayList<>(records);
    for (Inbound<V> r : records) {
      if (!r.partition().equals(partition)) {
        throw new IllegalArgumentException("record of " + r.partition() + " sent to the kit's " + partition);
      }
      sent.putIfAbsent(r.offset(), r);
      nextOffset = Math.max(nextOffset, r.offset() + 1);
    }
    List<DeadLetter> deadLetters = new ArrayList<>(unreadable);
    int journalBefore = journal().size();
    FailedRecords failures = new FailedRecords(partition, maxHandlerAttempts);   // the pipeline's own policy
    int resends = 0;
    while (true) {
      TestProbe<BatchOutcome> probe = kit.createTestProbe();
      actor.tell(new PartitionCommand.ApplyBatch(batch, deadLetters, probe.ref()));
      BatchOutcome outcome;
      if (failingWrites > 0) {
        // A failed write is never answered: the actor recovers with its failure backoff, and the
        // pipeline resends the batch after its ask-timeout. The kit does the same, sooner.
        try {
          outcome = probe.expectMessageClass(BatchOutcome.class, RESEND_AFTER);
        } catch (AssertionError noReply) {
          failingWrites--;
          if (++resends > 20) {
            throw new AssertionError("the batch at offsets " + offsets(records) + " was not answered after "
                + resends + " sends", noReply);
          }
          continue;
        }
      } else {
        outcome = probe.expectMessageClass(BatchOutcome.class, TIMEOUT);
      }
      if (outcome instanceof BatchOutcome.Applied a) {
        List<AppliedBatch> written = journal();
        List<E> events = written.subList(journalBefore, written.size()).stream()
            .flatMap(b -> b.events().stream()).map(e -> (E) e).toList();
        return new Result<>(a.applied(), a.droppedRedelivery(), a.droppedByKey(), List.copyOf(deadLetters),
            a.nextOffset(), events, state(), resends);
      }
      BatchOutcome.Rejected rejected = (BatchOutcome.Rejected) outcome;
      if (rejected.error() instanceof HandlerFailedException h) {
        Optional<DeadLetter> letter = failures.failed(h, keyOf(h.offset()), replayOf(h.offset()));
        if (letter.isPresent()) {
          deadLetters.add(letter.get());
          batch.removeIf(r -> r.offset() == h.offset());
        }
      } else if (rejected.error() instanceof RecordsParkedException p) {
        deadLetters.addAll(failures.parked(p, deadLetters, sent::containsKey, this::keyOf, this::replayOf));
        batch.removeIf(r -> p.offsets().contains(r.offset()));
      } else if (rejected.error() instanceof RetriableException && failingWrites > 0 && resends < 20) {
        // A failed write, answered once the actor recovered: sent again, as the pipeline does.
        failingWrites--;
        resends++;
      } else {
        throw new AssertionError("the actor rejected the batch at offsets " + offsets(records) + ": "
            + rejected.error().getMessage(), rejected.error());
      }
    }
  }

  private Optional<String> keyOf(long offset) {
    Inbound<V> r = sent.get(offset);
    return r == null ? Optional.empty() : r.key();
  }

  private OptionalLong replayOf(long offset) {
    Inbound<V> r = sent.get(offset);
    return r == null ? OptionalLong.empty()
        : Inbound.replayedOffset(partition, r.header(Inbound.REPLAY_OF_HEADER).orElse(null));
  }

  private static List<Long> offsets(List<? extends Inbound<?>> records) {
    return records.stream().map(Inbound::offset).toList();
  }

  /** Sends every record sent before from {@code fromOffset} on again, as the broker does after a crash. */
  public Result<S, E> redeliver(long fromOffset) {
    List<Inbound<V>> again = new ArrayList<>(sent.tailMap(fromOffset, true).values());
    if (again.isEmpty()) {
      throw new IllegalArgumentException("no record was sent at or after offset " + fromOffset);
    }
    return apply(again);
  }

  /**
   * The next {@code writes} journal writes of the partition fail, as a database that is away makes
   * them fail (Pekko's {@code PersistenceTestKit.failNextNPersisted}): the actor logs each, recovers
   * with its failure backoff, and the batch is sent again, as the pipeline does; its
   * {@link Result#resends()} says how often. Nothing is applied twice or lost.
   */
  public void failNextWrites(int writes) {
    journal.failNextNPersisted(partition.persistenceId(), writes);
    failingWrites += writes;
  }

  /**
   * Kills the actor (no orderly stop: what was not journaled is lost, as in a process crash) and
   * starts a new incarnation, which recovers from the journal and the latest snapshot.
   */
  public void crash() {
    kit.stop(actor, TIMEOUT);
    actor = start();
  }

  /** The actor's current state (the live actor's, after recovery if it just crashed). */
  @SuppressWarnings("unchecked")
  public S state() {
    TestProbe<Object> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.GetState(probe.ref()));
    return (S) probe.receiveMessage(TIMEOUT);
  }

  /**
   * The actor's {@code onQuery} answer to {@code query}, from its journaled state, as a pipeline's
   * query gets it: the query and the reply make a round trip through the serializers bound to their
   * classes (a type that could not travel between nodes fails here, naming it).
   */
  @SuppressWarnings("unchecked")
  public <R> R query(Query<R> query) {
    status();   // the live incarnation has recovered: it published its state
    Serialization serialization = SerializationExtension.get(kit.system().classicSystem());
    Query<R> received = (Query<R>) roundTrip(serialization, query, "query");
    return (R) roundTrip(serialization, views.get().answer(received), "reply");
  }

  private static Object roundTrip(Serialization serialization, Object o, String what) {
    if (o == null) {
      return null;
    }
    try {
      byte[] bytes = serialization.serialize(o).get();
      Serializer serializer = serialization.findSerializerFor(o);
      return serialization.deserialize(bytes, serializer.identifier(), Serializers.manifestFor(serializer, o)).get();
    } catch (Exception e) {   // NotSerializableException comes undeclared
      throw new IllegalArgumentException("the " + what + " " + o.getClass().getName() + " cannot travel between "
          + "nodes (" + e + "): implement io.fencepost.JacksonSerializable or bind a serializer to it", e);
    }
  }

  /** The actor's stored position and counters. */
  public PartitionStatus status() {
    TestProbe<PartitionStatus> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.GetStatus(probe.ref()));
    return probe.expectMessageClass(PartitionStatus.class, TIMEOUT);
  }

  /** Every journal entry the actor wrote, oldest first. */
  public List<AppliedBatch> journal() {
    return journal.persistedInStorage(partition.persistenceId()).stream()
        .map(e -> AppliedBatch.from(e).orElseThrow(() -> new IllegalStateException("not a Fencepost entry: " + e)))
        .toList();
  }

  /** Every event the handler emitted and the actor journaled, in order. */
  @SuppressWarnings("unchecked")
  public List<E> events() {
    return journal().stream().flatMap(b -> b.events().stream()).map(e -> (E) e).toList();
  }

  /** Every dead letter journaled, in order. */
  public List<AppliedBatch.DeadLetterView> deadLetters() {
    return journal().stream().flatMap(b -> b.deadLetters().stream()).toList();
  }

  /** Every outbox record journaled (what the relay would publish), in order. */
  public List<OutboxRecord> outbox() {
    return journal().stream().flatMap(b -> b.outbox().stream()).toList();
  }

  /** Every external call's journaled outcome (offset, idempotency key, outcome), in order. */
  public List<AppliedBatch.CallView> calls() {
    return journal().stream().flatMap(b -> b.calls().stream()).toList();
  }

  /** The underlying Pekko test kit, e.g. for probes of the actor's own collaborators. */
  public ActorTestKit actorTestKit() {
    return kit;
  }

  @Override
  public void close() {
    kit.shutdownTestKit();
  }

  /**
   * What one {@link #apply} did.
   *
   * @param applied records whose handler ran and whose effects were journaled
   * @param droppedRedelivery records below the stored offset, dropped
   * @param droppedByKey records whose business key was applied before, dropped
   * @param deadLettered records dead-lettered (handler failed for good, or parked), in the order given up on
   * @param nextOffset the partition's stored next offset after the batch
   * @param events the events this batch journaled, in order (none when it wrote nothing)
   * @param state the actor's state after the batch
   * @param resends how many times the batch was sent again because a journal write failed
   *     ({@link #failNextWrites})
   */
  public record Result<S, E>(int applied, int droppedRedelivery, int droppedByKey, List<DeadLetter> deadLettered,
      long nextOffset, List<E> events, S state, int resends) {
  }
}
