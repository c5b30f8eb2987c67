package io.fencepost.kafka;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.function.ToDoubleFunction;
import java.util.stream.Stream;

import io.fencepost.PartitionId;
import io.fencepost.kafka.internal.PipelineMetrics;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The life cycle of this node's partitions, on the consumer thread only (every method but
 * {@link #assigned()}): assigned (paused, actor admitted, seek target asked for off the thread),
 * flowing (seeked, stream started, resumed), and revoked, lost or restarted (stream closed, in-flight
 * batch and actor awaited, offset committed). See {@link PartitionOwnership} for the rules.
 */
final class Assignments {

  private static final Logger log = LoggerFactory.getLogger(Assignments.class);

  private final ActorSystem<?> system;
  private final PipelineSettings settings;
  private final OwnershipSeams seams;
  private final PipelineMetrics metrics;
  private final OffsetCommits commits;
  private final FlowControl flow;
  /** Runs tasks on the consumer thread (its next turn): how other threads' results come back. */
  private final Executor post;
  /** The assignment of every partition this node holds, for status and the stall check (any thread). */
  private final Map<PartitionId, PartitionProgress> assigned = new ConcurrentHashMap<>();
  private final Map<TopicPartition, Assignment> owned = new HashMap<>();
  /** Completion of the latest stream of each partition: the next one starts after it. */
  private final Map<TopicPartition, CompletionStage<Done>> lastStream = new HashMap<>();
  private Consumer<byte[], byte[]> consumer;

  Assignments(ActorSystem<?> system, PipelineSettings settings, OwnershipSeams seams, FlowControl flow,
      Executor post) {
    this.system = system;
    this.settings = settings;
    this.seams = seams;
    this.flow = flow;
    this.post = post;
    this.commits = new OffsetCommits(settings, seams.ticker());
    this.metrics = new PipelineMetrics(system);
  }

  /** The consumer whose assignments these are (a new one after a failure; null while there is none). */
  void use(Consumer<byte[], byte[]> consumer) {
    this.consumer = consumer;
  }

  /** Every partition held here and its assignment's progress (any thread). */
  Map<PartitionId, PartitionProgress> assigned() {
    return assigned;
  }

  private PartitionId partitionId(TopicPartition tp) {
    return new PartitionId(settings.groupId(), tp.topic(), tp.partition());
  }

  /** {@code measure} of the partition's current assignment; NaN while it has none. */
  private double measure(PartitionId id, ToDoubleFunction<PartitionProgress> measure) {
    PartitionProgress p = assigned.get(id);
    return p == null ? Double.NaN : measure.applyAsDouble(p);
  }

  /** Partitions the group gave this node: paused at once, then prepared. */
  void assign(Collection<TopicPartition> partitions) {
    List<TopicPartition> fresh = partitions.stream().filter(tp -> !owned.containsKey(tp)).toList();
    consumer.pause(fresh);
    log.info("[{}] assigned {}", settings.name(), fresh);
    prepare(fresh);
  }

  /** Hands a partition's polled records to its stream. */
  void offer(TopicPartition tp, List<ConsumerRecord<byte[], byte[]>> records) {
    flow.offer(consumer, tp, owned.get(tp), records);
  }

  /** Commits applied offsets when enough records or time passed. */
  void maybeCommit() {
    commits.maybeCommit(consumer, owned.keySet());
  }

  /** Seeks a partition to its stored offset again with a new stream, if {@code assignment} is still current. */
  void restart(PartitionId id, PartitionProgress assignment, String cause, String why) {
    Assignment o = owned.get(new TopicPartition(id.topic(), id.partition()));
    if (o == null || o.progress != assignment || assignment.halted != null) {
      return;   // a halted partition stays halted until it is assigned again
    }
    metrics.restarted(id, cause);
    log.warn("[{}] {}: seeking it to its actor's stored offset again", id.shortName(), why);
    end(o);
    consumer.pause(List.of(o.tp));
    prepare(List.of(o.tp));
  }

  /** Pauses a halted partition, if {@code assignment} is still current; logs and counts it once. */
  void halt(PartitionId id, PartitionProgress assignment, String why, String cause) {
    Assignment o = owned.get(new TopicPartition(id.topic(), id.partition()));
    if (o == null || o.progress != assignment || assignment.haltHandled) {
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
  }

  /**
   * Newly assigned partitions (or one seeked again): their actors start here, recover, and tell
   * where the streams start, off this thread.
   */
  private void prepare(Collection<TopicPartition> tps) {
    for (TopicPartition tp : tps) {
      Assignment o = new Assignment(tp, partitionId(tp), seams.ticker().nanoTime());
      owned.put(tp, o);
      assigned.put(o.id, o.progress);
      metrics.partition(o.id, () -> measure(o.id, PartitionProgress::lag),
          () -> measure(o.id, p -> p.stalled(settings.stallTimeout(), seams.ticker().nanoTime()) ? 1 : 0),
          settings.outbox().enabled());
      seams.actors().admit(o.id);
      CompletionStage<Done> previous = lastStream.getOrDefault(o.tp, CompletableFuture.completedFuture(Done.getInstance()));
      // A revoked stream sends nothing new; its batch in flight ends within ask-timeout, plus a
      // resend backoff it may be sleeping in.
      Stages.endedOrLate(previous, settings.askTimeout().multipliedBy(2).plus(settings.retryBackoff().max())
              .plus(settings.drainTimeout()), bound -> log.error("[{}] the previous stream of {} has not ended after "
              + "{}; starting the new one anyway (the journal still refuses any batch that would skip or repeat an "
              + "offset)", settings.name(), o.tp, bound))
          .thenCompose(v -> seams.startOffsets().seekTarget(o.id, o.progress, () -> !o.over))
          .whenComplete((target, error) -> post.execute(() -> prepared(o, target, error)));
    }
  }

  /** The seek target of an assignment arrived: start its stream if the assignment still holds. */
  private void prepared(Assignment o, Long target, Throwable error) {
    if (owned.get(o.tp) != o || o.over || o.streaming()) {
      log.debug("[{}] preparation of {} ended: its assignment ended meanwhile", settings.name(), o.tp);
      return;
    }
    if (error != null) {
      Throwable cause = error instanceof CompletionException && error.getCause() != null
          ? error.getCause() : error;
      if (cause instanceof SeekTargets.AboveLogEnd) {
        if (o.progress.halted == null) {
          o.progress.halted = cause.getMessage();
        }
        halt(o.id, o.progress, cause.getMessage(), "offset-above-log-end");
        return;
      }
      if (!(cause instanceof CancellationException) || !o.over) {
        log.warn("[{}] could not find where {} starts: {}; asking again", settings.name(), o.tp, cause.toString());
        Backoff.after(system, settings.retryBackoff().min(),
                () -> seams.startOffsets().seekTarget(o.id, o.progress, () -> !o.over))
            .whenComplete((t, e) -> post.execute(() -> prepared(o, t, e)));
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
    o.progress.lastProgressNanos = seams.ticker().nanoTime();
    consumer.resume(List.of(o.tp));
    seams.relays().start(o.id);
    log.info("[{}] seeking to stored offsets {}", settings.name(), Map.of(o.tp, target));
  }

  private void startStream(Assignment o) {
    CompletionStage<Done> done = o.startStream(system, settings, seams.batches(), flow.queueCapacity(),
            this::afterBatch)
        .whenComplete((d, e) -> {
          if (e != null && !o.over) {
            log.error("[{}] stream of {} failed: {}", settings.name(), o.tp, e.toString(), e);
            post.execute(() -> restart(o.id, o.progress, "stream-failed", "its stream failed"));
          }
        });
    lastStream.put(o.tp, done);
  }

  /** A batch of {@code size} records left the stream (stream thread). */
  private void afterBatch(Assignment o, int size, OptionalLong next) {
    if (next.isPresent()) {
      commits.applied(o.tp, next.getAsLong(), size);
    }
    if (flow.drained(o, size)) {
      post.execute(() -> flow.resumeIfDrained(consumer, o, owned.get(o.tp) == o));
    }
  }

  /** Ends an assignment: no more batches are sent, a preparation under way is dropped. */
  private void end(Assignment o) {
    owned.remove(o.tp, o);
    assigned.remove(o.id, o.progress);
    o.progress.revoked = true;
    o.progress.flowing = false;
    o.close();
  }

  /** Ends assignments (revoked, or lost when {@code lost}): waits for their in-flight batches and actors. */
  void release(Collection<TopicPartition> tps, boolean lost) {
    List<Assignment> ended = new ArrayList<>();
    for (TopicPartition tp : tps) {
      Assignment o = owned.get(tp);
      if (o != null) {
        end(o);
        seams.relays().stop(o.id);
        ended.add(o);
      }
    }
    if (ended.isEmpty()) {
      return;
    }
    letGo(ended);
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
   * Waits, bounded by {@code drain-timeout}, for the ended assignments' streams (their batches in
   * flight, and the partition's latest stream: after a restart it can still run while the new one
   * prepares), then stops their actors and waits until they stopped, so that the next owner recovers
   * after this node's last write: a handover without a fence.
   */
  private void letGo(List<Assignment> ended) {
    long deadline = System.nanoTime() + settings.drainTimeout().toNanos();
    List<TopicPartition> tps = ended.stream().map(o -> o.tp).toList();
    if (!Stages.awaitAll(ended.stream().flatMap(o -> Stream.of(o.done(), lastStream.getOrDefault(o.tp, o.done()))),
        settings.drainTimeout().toNanos())) {
      log.info("[{}] in-flight batches of {} did not finish within drain-timeout {}; abandoned (the next owner "
          + "reads the actor's stored offset)", settings.name(), tps, settings.drainTimeout());
    }
    if (!Stages.awaitAll(ended.stream().map(o -> seams.actors().stop(o.id)), deadline - System.nanoTime())) {
      log.info("[{}] actors of {} still stopping after drain-timeout {}; letting go anyway (the journal's fence "
          + "refuses a late write of theirs)", settings.name(), tps, settings.drainTimeout());
    }
  }

  /** Ends every assignment for good on this node (the consumer failed or closes): relays, actors and meters stop. */
  void letGoAll() {
    for (Assignment o : new ArrayList<>(owned.values())) {
      end(o);
      seams.relays().stop(o.id);
      seams.actors().stop(o.id);
      metrics.removed(o.id);
    }
  }

  /** Stop: buffered records are still applied (bounded by drain-timeout), then offsets committed. */
  void drain() {
    List<Assignment> all = new ArrayList<>(owned.values());
    log.info("[{}] stopping: draining in-flight batches of {} partition(s)", settings.name(), all.size());
    all.forEach(Assignment::close);
    letGo(all);
    if (consumer != null) {
      commits.commit(consumer, new HashSet<>(owned.keySet()), true);
    }
  }
}
