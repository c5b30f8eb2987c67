package io.fencepost.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

import io.fencepost.PartitionId;
import io.fencepost.kafka.internal.PipelineMetrics;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.kafka.ConsumerSettings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ownership state machine of one pipeline on one node. One thread owns the {@link KafkaConsumer}
 * and handles, strictly in the order Kafka delivers them, every assignment and revocation; nothing
 * another thread computes acts on a partition except through this thread, after checking that the
 * assignment it was computed for is still the current one.
 *
 * <p>A partition's life on this node:
 * <ol>
 *   <li><b>assigned</b> (rebalance listener): paused at once, so not one record is fetched for it;
 *       its actor starts on this node ({@link PartitionHost}), recovers from the journal and is
 *       asked for the stored offset, off this thread;</li>
 *   <li><b>flowing</b> (when that answer arrives and the same assignment still holds): seeked to the
 *       stored offset, one stream started, resumed. The consumer's committed offset is never used;</li>
 *   <li><b>revoked or lost</b> (rebalance listener): its stream stops taking batches, the batch in
 *       flight may finish (bounded by {@code drain-timeout}), its actor stops, its last applied
 *       offset is committed.
 *       A preparation still under way is cancelled. Only then does the listener return, so in a
 *       cooperative rebalance the next owner is assigned the partition after this node let go.</li>
 * </ol>
 * A partition is seeked only while assigned, served by at most one stream at a time (a new stream
 * starts only after the previous one of that partition ended), and backpressured by pausing it.
 */
final class PartitionOwnership {

  private static final Logger log = LoggerFactory.getLogger(PartitionOwnership.class);
  private static final Duration POLL = Duration.ofMillis(200);

  private final ActorSystem<?> system;
  private final PipelineSettings settings;
  private final PartitionHost host;
  private final SeekTargets targets;
  private final BatchDelivery<?> delivery;
  private final RelayRegistry relays;
  private final Map<String, Object> consumerProperties;
  private final int highWater;
  private final int lowWater;
  private final int queueCapacity;
  private final Backoff restartBackoff;
  private final PipelineMetrics metrics;

  /** The assignment of every partition this node holds, for status and the stall check (any thread). */
  private final Map<PartitionId, PartitionProgress> assigned = new ConcurrentHashMap<>();
  /** Work for the consumer thread, posted by other threads. */
  private final ConcurrentLinkedQueue<Runnable> inbox = new ConcurrentLinkedQueue<>();
  private final OffsetCommits commits;
  private final CompletableFuture<Done> stopped = new CompletableFuture<>();
  private final Thread thread;
  private volatile boolean stopRequested;
  /** Set at an assignment (an empty one too): the consumer is in its group. Reset when it leaves it. */
  private volatile boolean joined;
  /** When this node's assignment last changed (assigned, revoked, lost, or the consumer left). */
  private volatile long assignmentChangedNanos = System.nanoTime();
  /** Each turn of the consumer loop, failed ones included: a thread that stops turning is stuck. */
  private volatile long lastTurnNanos = System.nanoTime();
  /** The consumer's failure while it is being replaced (backoff and rejoin), else null. */
  private volatile String consumerFailure;
  private volatile KafkaConsumer<byte[], byte[]> consumer;


  // Consumer thread only.
  private final Map<TopicPartition, Assignment> owned = new HashMap<>();
  /** Completion of the latest stream of each partition: the next one starts after it. */
  private final Map<TopicPartition, CompletionStage<Done>> lastStream = new HashMap<>();

  PartitionOwnership(ActorSystem<?> system, PipelineSettings settings, PartitionHost host, SeekTargets targets,
      BatchDelivery<?> delivery, RelayRegistry relays) {
    this.system = system;
    this.settings = settings;
    this.host = host;
    this.targets = targets;
    this.delivery = delivery;
    this.relays = relays;
    this.consumerProperties = consumerProperties(system, settings);
    int maxPoll = Integer.parseInt(String.valueOf(consumerProperties.getOrDefault(ConsumerConfig.MAX_POLL_RECORDS_CONFIG,
        "500")));
    this.highWater = Math.max(2 * settings.batch().maxRecords(), maxPoll);
    this.lowWater = Math.max(1, highWater / 2);
    this.queueCapacity = highWater + maxPoll;
    this.commits = new OffsetCommits(settings);
    this.metrics = new PipelineMetrics(system);
    this.restartBackoff = new Backoff(settings.retryBackoff().min(), settings.retryBackoff().max(), 2.0);
    this.thread = new Thread(this::run, "fencepost-consumer-" + settings.name());
    this.thread.setDaemon(true);
  }

  /**
   * The consumer's properties: Pekko's {@code pekko.kafka.consumer.kafka-clients}, then the
   * pipeline's {@code common-kafka-clients}, then its {@code kafka-clients}; offsets never
   * auto-committed; cooperative rebalancing unless an assignor is configured.
   */
  static Map<String, Object> consumerProperties(ActorSystem<?> system, PipelineSettings settings) {
    Map<String, Object> props = new HashMap<>(
        ConsumerSettings.create(system, new ByteArrayDeserializer(), new ByteArrayDeserializer()).getProperties());
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
    // New partitions and recreated topics are seen within 30 s (Kafka's default is 5 minutes).
    props.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "30000");
    props.putAll(settings.commonKafkaClients());
    props.putAll(settings.kafkaClients());
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, settings.bootstrapServers());
    props.put(ConsumerConfig.GROUP_ID_CONFIG, settings.groupId());
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, settings.autoOffsetReset());
    return props;
  }

  /** Creates and subscribes the consumer here (so that bad settings fail the start), then runs it on its thread. */
  void start() {
    consumer = new KafkaConsumer<>(consumerProperties, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    consumer.subscribe(settings.topics(), new Listener());
    thread.start();
  }

  Map<PartitionId, PartitionProgress> assigned() {
    return assigned;
  }

  private double lagOf(PartitionId id) {
    PartitionProgress p = assigned.get(id);
    return p == null ? Double.NaN : p.lag();
  }

  private double stalledOf(PartitionId id) {
    PartitionProgress p = assigned.get(id);
    return p == null ? Double.NaN : p.stalled(settings.stallTimeout(), System.nanoTime()) ? 1 : 0;
  }

  /** Whether the consumer is in its group: it received an assignment (possibly empty) and has not left since. */
  boolean joined() {
    return joined;
  }

  /** Nanoseconds since this node's assignment last changed. */
  long sinceAssignmentChangedNanos() {
    return System.nanoTime() - assignmentChangedNanos;
  }

  /** Nanoseconds since the consumer thread last went round its loop (a poll, or a failed attempt). */
  long sinceLastTurnNanos() {
    return System.nanoTime() - lastTurnNanos;
  }

  /** Why the consumer is being replaced, or null while it runs. */
  String consumerFailure() {
    return consumerFailure;
  }

  /** Whether the consumer thread runs (it ends only after a stop). */
  boolean running() {
    return thread.isAlive();
  }

  /** Stops consuming: buffered and in-flight batches finish (bounded by drain-timeout), then the consumer closes. */
  CompletionStage<Done> stop() {
    stopRequested = true;
    wakeup();
    return stopped;
  }

  /**
   * Seeks a partition to its stored offset again with a new stream, if {@code assignment} is still
   * its current assignment (a stream that misses records, or a stalled partition).
   */
  void restart(PartitionId id, PartitionProgress assignment, String why) {
    post(() -> {
      Assignment o = owned.get(new TopicPartition(id.topic(), id.partition()));
      if (o == null || o.progress != assignment || consumer == null || assignment.halted != null) {
        return;   // a halted partition stays halted until it is assigned again
      }
      log.warn("[{}] {}: seeking it to its actor's stored offset again", id.shortName(), why);
      end(o);
      consumer.pause(List.of(o.tp));
      prepare(List.of(o.tp));
    });
  }

  /**
   * Stops consuming a partition whose actor cannot go on (or whose log cannot be read from its stored
   * offset), if {@code assignment} is still current: paused until the partition is assigned again.
   * {@code cause} tags the metric; null when the actor halted (it logged and counted that already).
   * Nothing is committed or skipped; the watchdog leaves it alone.
   */
  void halt(PartitionId id, PartitionProgress assignment, String why, String cause) {
    if (assignment.halted == null) {
      assignment.halted = why;   // at once: delivery sends none of the assignment's later batches
    }
    post(() -> {
      Assignment o = owned.get(new TopicPartition(id.topic(), id.partition()));
      if (o == null || o.progress != assignment || assignment.haltHandled || consumer == null) {
        return;
      }
      assignment.haltHandled = true;
      consumer.pause(List.of(o.tp));
      if (cause == null) {
        log.warn("[{}] partition halted by its actor; not consuming it on this node until it is assigned again",
            id.shortName());
      } else {
        metrics.halted(id, cause);
        log.error("[{}] partition HALTED: {}", id.shortName(), why);
      }
    });
  }

  private void post(Runnable task) {
    inbox.add(task);
    wakeup();
  }

  private void wakeup() {
    KafkaConsumer<byte[], byte[]> c = consumer;
    if (c != null) {
      c.wakeup();
    }
  }

  private PartitionId partitionId(TopicPartition tp) {
    return new PartitionId(settings.groupId(), tp.topic(), tp.partition());
  }

  private void run() {
    int failures = 0;
    long lastFailure = 0;
    while (!stopRequested) {
      lastTurnNanos = System.nanoTime();
      try {
        if (consumer == null) {
          consumer = new KafkaConsumer<>(consumerProperties, new ByteArrayDeserializer(), new ByteArrayDeserializer());
          consumer.subscribe(settings.topics(), new Listener());
        }
        runInbox();
        commits.maybeCommit(consumer, owned.keySet());
        ConsumerRecords<byte[], byte[]> records = consumer.poll(POLL);
        consumerFailure = null;
        if (failures > 0 && System.nanoTime() - lastFailure > 6 * settings.retryBackoff().max().toNanos()) {
          failures = 0;   // healthy for a while: the next failure backs off from the start again
        }
        for (TopicPartition tp : records.partitions()) {
          offer(tp, records.records(tp));
        }
      } catch (WakeupException e) {
        // another thread posted work (or asked to stop): run it
      } catch (RuntimeException | Error e) {
        if (stopRequested) {
          break;
        }
        Duration wait = restartBackoff.delay(failures++);
        consumerFailure = e.toString();
        lastFailure = System.nanoTime();
        log.error("[{}] consumer failed; closing it and starting a new one in {} ms (its partitions are re-assigned "
            + "and seek to their actors' stored offsets): {}", settings.name(), wait.toMillis(), e.toString(), e);
        try {
          // Let go of every partition at once: no heartbeats run while a closing consumer's listener waits.
          new ArrayList<>(owned.values()).forEach(this::letGo);
          closeConsumer();
        } catch (RuntimeException | Error closing) {
          log.warn("[{}] closing the failed consumer: {}", settings.name(), closing.toString());
          consumer = null;
          joined = false;
        }
        sleep(wait);
      }
    }
    try {
      drain();
    } catch (RuntimeException e) {
      log.warn("[{}] stopping the consumer: {}", settings.name(), e.toString());
    } finally {
      stopped.complete(Done.getInstance());
    }
  }

  private void runInbox() {
    Runnable task;
    while ((task = inbox.poll()) != null) {
      task.run();
    }
  }

  /** Hands a partition's polled records to its stream; pauses the partition when its stream is full. */
  private void offer(TopicPartition tp, List<ConsumerRecord<byte[], byte[]>> records) {
    Assignment o = owned.get(tp);
    if (o == null || !o.streaming()) {
      // Paused partitions return no records; not one may reach a stream that did not seek.
      log.error("[{}] {} records of {} polled while it is {}: not delivered (a bug; its records are read again "
          + "from the stored offset)", settings.name(), records.size(), tp, o == null ? "not assigned" : "not seeked yet");
      return;
    }
    if (o.buffered.get() == 0 && !o.progress.inFlight) {
      o.progress.busySinceNanos = System.nanoTime();   // an idle partition has work again
    }
    for (ConsumerRecord<byte[], byte[]> r : records) {
      if (!o.offer(r)) {
        // Full (or ended): read this record again once the stream took what it holds.
        consumer.seek(tp, r.offset());
        pause(o);
        return;
      }
    }
    if (o.buffered.get() >= highWater) {
      pause(o);
    }
  }

  private void pause(Assignment o) {
    if (!o.backpressured) {
      o.backpressured = true;
      consumer.pause(List.of(o.tp));
      // The stream may have drained meanwhile without seeing the flag: look again.
      resumeIfDrained(o);
    }
  }

  private void resumeIfDrained(Assignment o) {
    if (o.backpressured && owned.get(o.tp) == o && o.buffered.get() <= lowWater && o.progress.halted == null) {
      o.backpressured = false;
      consumer.resume(List.of(o.tp));
    }
  }

  /**
   * Newly assigned partitions (or one seeked again): their actors start here, recover, and tell
   * where the streams start, off this thread.
   */
  private void prepare(Collection<TopicPartition> tps) {
    for (TopicPartition tp : tps) {
      Assignment o = new Assignment(tp, partitionId(tp));
      owned.put(tp, o);
      assigned.put(o.id, o.progress);
      metrics.partition(o.id, () -> lagOf(o.id), () -> stalledOf(o.id), settings.outbox().enabled());
      host.admit(o.id);
      CompletionStage<Done> previous = lastStream.getOrDefault(o.tp, CompletableFuture.completedFuture(Done.getInstance()));
      previousEnded(o, previous)
          .thenCompose(v -> targets.seekTarget(o.id, o.progress, () -> !o.over))
          .whenComplete((target, error) -> post(() -> prepared(o, target, error)));
    }
  }

  /**
   * Waits for the previous stream of the partition to end. A revoked stream sends nothing new; its
   * batch in flight ends within ask-timeout, plus a resend backoff it may be sleeping in.
   */
  private CompletionStage<Done> previousEnded(Assignment o, CompletionStage<Done> previous) {
    Duration bound = settings.askTimeout().multipliedBy(2).plus(settings.retryBackoff().max())
        .plus(settings.drainTimeout());
    return previous.toCompletableFuture().exceptionally(e -> Done.getInstance())
        .completeOnTimeout(null, bound.toMillis(), TimeUnit.MILLISECONDS)
        .thenApply(done -> {
          if (done == null) {
            log.error("[{}] the previous stream of {} has not ended after {}; starting the new one anyway (the "
                + "journal still refuses any batch that would skip or repeat an offset)", settings.name(), o.tp, bound);
          }
          return Done.getInstance();
        });
  }

  /** The seek target of an assignment arrived (consumer thread): start its stream if it still holds. */
  private void prepared(Assignment o, Long target, Throwable error) {
    if (owned.get(o.tp) != o || o.over || o.streaming()) {
      log.debug("[{}] preparation of {} ended: its assignment ended meanwhile", settings.name(), o.tp);
      return;
    }
    if (error != null) {
      Throwable cause = error instanceof CompletionException && error.getCause() != null
          ? error.getCause() : error;
      if (cause instanceof SeekTargets.AboveLogEnd) {
        halt(o.id, o.progress, cause.getMessage(), "offset-above-log-end");
        return;
      }
      if (!(cause instanceof CancellationException) || !o.over) {
        log.warn("[{}] could not find where {} starts: {}; asking again", settings.name(), o.tp, cause.toString());
        Backoff.after(system, settings.retryBackoff().min(), () -> targets.seekTarget(o.id, o.progress, () -> !o.over))
            .whenComplete((t, e) -> post(() -> prepared(o, t, e)));
      }
      return;
    }
    if (!consumer.assignment().contains(o.tp)) {
      // Cannot happen: revocation removes the assignment first.
      log.error("[{}] {} is not assigned to this consumer any more; not seeking it (a bug)", settings.name(), o.tp);
      return;
    }
    consumer.seek(o.tp, target);
    o.progress.knownNextOffset = target;
    o.progress.highestDelivered = target - 1;
    startStream(o);
    o.progress.flowing = true;
    o.progress.lastProgressNanos = System.nanoTime();
    consumer.resume(List.of(o.tp));
    relays.start(o.id);
    log.info("[{}] seeking to stored offsets {}", settings.name(), Map.of(o.tp, target));
  }

  private void startStream(Assignment o) {
    CompletionStage<Done> done = o.startStream(system, settings, delivery, queueCapacity, this::afterBatch)
        .whenComplete((d, e) -> {
          if (e != null && !o.over) {
            log.error("[{}] stream of {} failed: {}", settings.name(), o.tp, e.toString(), e);
            restart(o.id, o.progress, "its stream failed");
          }
        });
    lastStream.put(o.tp, done);
  }

  /** A batch of {@code size} records left the stream (stream thread). */
  private void afterBatch(Assignment o, int size, OptionalLong next) {
    if (next.isPresent()) {
      commits.applied(o.tp, next.getAsLong(), size);
    }
    if (o.buffered.addAndGet(-size) <= lowWater && o.backpressured) {
      post(() -> resumeIfDrained(o));
    }
  }

  /** Ends an assignment (consumer thread): no more batches are sent, a preparation under way is dropped. */
  private void end(Assignment o) {
    owned.remove(o.tp, o);
    assigned.remove(o.id, o.progress);
    o.progress.revoked = true;
    o.progress.flowing = false;
    o.close();
  }



  /** Ends assignments (revoked, lost, or the consumer closes): waits for their in-flight batches. */
  private void release(Collection<TopicPartition> tps, boolean lost) {
    List<Assignment> ended = new ArrayList<>();
    for (TopicPartition tp : tps) {
      Assignment o = owned.get(tp);
      if (o != null) {
        end(o);
        relays.stop(o.id);
        ended.add(o);
      }
    }
    if (ended.isEmpty()) {
      return;
    }
    long deadline = System.nanoTime() + settings.drainTimeout().toNanos();
    awaitStreams(ended);
    awaitStopped(ended, deadline);
    for (Assignment o : ended) {
      if (!owned.containsKey(o.tp)) {
        metrics.removed(o.id);
      }
    }
    if (!lost) {
      commits.commit(consumer, tps, true);
    } else {
      commits.forget(tps);
    }
  }

  /**
   * Stops the partitions' actors and waits until they stopped (bounded by {@code deadline}), so that
   * the next owner recovers after this node's last write: a handover without a fence.
   */
  private void awaitStopped(List<Assignment> ended, long deadline) {
    boolean stopped = awaitAll(ended.stream().map(o -> host.stop(o.id)), deadline - System.nanoTime());
    if (!stopped) {
      log.info("[{}] actors of {} still stopping after drain-timeout {}; letting go anyway (the journal's fence "
          + "refuses a late write of theirs)", settings.name(), ended.stream().map(o -> o.tp).toList(),
          settings.drainTimeout());
    }
  }

  private void awaitStreams(List<Assignment> streams) {
    // The partition's latest stream too: after a restart it can still run while the new one prepares.
    boolean finished = awaitAll(streams.stream().flatMap(o -> Stream.of(o.done(), lastStream.getOrDefault(o.tp,
        o.done()))), settings.drainTimeout().toNanos());
    if (!finished) {
      log.info("[{}] in-flight batches of {} did not finish within drain-timeout {}; abandoned (the next owner "
          + "reads the actor's stored offset)", settings.name(), streams.stream().map(o -> o.tp).toList(),
          settings.drainTimeout());
    }
  }

  /** Waits up to {@code nanos} for every stage (failed ones count as ended); false on timeout. */
  private static boolean awaitAll(Stream<? extends CompletionStage<?>> stages, long nanos) {
    CompletableFuture<?>[] all = stages.map(st -> st.toCompletableFuture().exceptionally(e -> null))
        .toArray(CompletableFuture[]::new);
    try {
      CompletableFuture.allOf(all).get(Math.max(0, nanos), TimeUnit.NANOSECONDS);
      return true;
    } catch (TimeoutException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (ExecutionException e) {
      return true;   // unreachable: every stage swallows its own failure
    }
  }

  /** Reacts to the group's decisions on the consumer thread, inside poll(). */
  private final class Listener implements ConsumerRebalanceListener {
    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
      joined = true;
      assignmentChangedNanos = System.nanoTime();
      if (partitions.isEmpty()) {
        return;
      }
      List<TopicPartition> fresh = partitions.stream().filter(tp -> !owned.containsKey(tp)).toList();
      consumer.pause(fresh);
      log.info("[{}] assigned {}", settings.name(), fresh);
      prepare(fresh);
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
      assignmentChangedNanos = System.nanoTime();
      if (!partitions.isEmpty()) {
        log.info("[{}] revoked {}", settings.name(), partitions);
        release(partitions, false);
      }
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
      joined = false;   // it left the group; the next assignment says it is back
      assignmentChangedNanos = System.nanoTime();
      if (!partitions.isEmpty()) {
        log.warn("[{}] lost {} (this consumer left the group, e.g. after a long pause); their actors' fence refuses "
            + "any write of this node that another owner overtook", settings.name(), partitions);
        release(partitions, true);
      }
    }
  }

  private void closeConsumer() {
    KafkaConsumer<byte[], byte[]> c = consumer;
    if (c == null) {
      return;
    }
    try {
      c.close(Duration.ofSeconds(5));   // revokes (listener) and leaves the group
    } catch (RuntimeException e) {
      log.debug("[{}] closing the consumer: {}", settings.name(), e.toString());
    }
    new ArrayList<>(owned.values()).forEach(this::letGo);
    consumer = null;
    joined = false;
    assignmentChangedNanos = System.nanoTime();
  }

  /** Ends an assignment for good on this node: its relay and actor stop, its meters go. */
  private void letGo(Assignment o) {
    end(o);
    relays.stop(o.id);
    host.stop(o.id);
    metrics.removed(o.id);
  }

  /** Stop: buffered records are still applied (bounded by drain-timeout), offsets committed, consumer closed. */
  private void drain() {
    List<Assignment> all = new ArrayList<>(owned.values());
    log.info("[{}] stopping: draining in-flight batches of {} partition(s)", settings.name(), all.size());
    long deadline = System.nanoTime() + settings.drainTimeout().toNanos();
    try {
      all.forEach(Assignment::close);
      awaitStreams(all);
      awaitStopped(all, deadline);
      if (consumer != null) {
        commits.commit(consumer, new HashSet<>(owned.keySet()), true);
      }
    } finally {
      all.forEach(this::letGo);
      closeConsumer();
    }
  }

  private void sleep(Duration wait) {
    long until = System.nanoTime() + wait.toNanos();
    while (!stopRequested && System.nanoTime() < until) {
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}
