package io.fencepost.kafka;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import io.fencepost.PartitionId;
import io.fencepost.Query;
import io.fencepost.errors.PartitionMovingException;
import io.fencepost.errors.PositionNotReachedException;
import io.fencepost.errors.QueryFailedException;
import io.fencepost.kafka.internal.QueryReply;
import io.fencepost.kafka.internal.QueryRequest;
import org.apache.kafka.common.utils.Utils;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;

/**
 * Routes a query to the keeper of its partition: this node's own when it owns the partition, else
 * the ones the {@link PartitionDirectory} lists. One attempt asks every listed keeper (two during a
 * move) and takes the first answer; an attempt without one (no owner listed, an owner that no longer
 * owns the partition or does not answer within {@code query.attempt-timeout}, a bound not reached)
 * is followed by another, after a short pause, until the query's timeout.
 */
final class QueryRouter {

  private static final long FIRST_PAUSE_MILLIS = 20;
  private static final long MAX_PAUSE_MILLIS = 200;
  /**
   * Less time left than this starts no attempt (the last one's verdict stands): the owner's wait
   * for a bound could not end, by Pekko's scheduler, clearly before the ask's.
   */
  private static final long MIN_ATTEMPT_MILLIS = 100;

  private final ActorSystem<?> system;
  private final PipelineSettings settings;
  private final PartitionHost host;
  private final PartitionDirectory directory;
  private final TopicPartitionCounts counts;
  private final QueryCodecs codecs;

  QueryRouter(ActorSystem<?> system, PipelineSettings settings, PartitionHost host, PartitionDirectory directory,
      TopicPartitionCounts counts) {
    this.system = system;
    this.settings = settings;
    this.host = host;
    this.directory = directory;
    this.counts = counts;
    this.codecs = new QueryCodecs(system);
  }

  CompletionStage<PartitionId> partitionOf(QueryTarget target) {
    if (!settings.topics().contains(target.topic())) {
      return CompletableFuture.failedFuture(new IllegalArgumentException("[" + settings.name() + "] consumes "
          + settings.topics() + ", not [" + target.topic() + "]: a query names a topic of its pipeline"));
    }
    return counts.of(target.topic()).thenApply(n -> {
      int partition = target.partition().isPresent() ? target.partition().getAsInt()
          : Utils.toPositive(Utils.murmur2(target.serializedKey().orElseThrow())) % n;
      if (partition >= n) {
        throw new IllegalArgumentException("[" + settings.name() + "] topic [" + target.topic() + "] has " + n
            + " partitions: partition " + partition + " does not exist");
      }
      return new PartitionId(settings.groupId(), target.topic(), partition);
    });
  }

  <R> CompletionStage<QueryResult<R>> query(QueryTarget target, Query<R> query, QueryOptions options) {
    Optional<String> unserializable = codecs.unserializable(query, "query");
    if (unserializable.isPresent()) {
      return CompletableFuture.failedFuture(new IllegalArgumentException(unserializable.get()));
    }
    Duration timeout = options.timeout().orElse(settings.query().timeout());
    long started = System.nanoTime();
    Instant startedAt = Instant.now();
    return partitionOf(target).thenCompose(id -> {
      Attempts<R> attempts = new Attempts<>(id, query, options.minNextOffset(), started + timeout.toNanos(),
          startedAt, timeout);
      attempt(attempts, FIRST_PAUSE_MILLIS);
      return attempts.result;
    });
  }

  /** One query's attempts; its result completes once. */
  private static final class Attempts<R> {
    final PartitionId id;
    final Query<R> query;
    final long minNextOffset;
    final long deadlineNanos;
    final Instant startedAt;
    final Duration timeout;
    final CompletableFuture<QueryResult<R>> result = new CompletableFuture<>();
    volatile String lastFailure = "";
    volatile long notReachedAt = Long.MIN_VALUE;
    volatile int attempts;

    Attempts(PartitionId id, Query<R> query, long minNextOffset, long deadlineNanos, Instant startedAt,
        Duration timeout) {
      this.id = id;
      this.query = query;
      this.minNextOffset = minNextOffset;
      this.deadlineNanos = deadlineNanos;
      this.startedAt = startedAt;
      this.timeout = timeout;
    }
  }

  private <R> void attempt(Attempts<R> a, long pauseMillis) {
    try {
      tryOnce(a, pauseMillis);
    } catch (RuntimeException e) {
      a.result.completeExceptionally(e);   // a query never hangs on a failure of its own routing
    }
  }

  private <R> void tryOnce(Attempts<R> a, long pauseMillis) {
    long remainingMillis = TimeUnit.NANOSECONDS.toMillis(a.deadlineNanos - System.nanoTime());
    if (remainingMillis <= 0 || remainingMillis < MIN_ATTEMPT_MILLIS && a.attempts > 0) {
      giveUp(a);
      return;
    }
    a.attempts++;
    Optional<ActorRef<QueryRequest>> local = host.localKeeper(a.id);
    CompletionStage<Set<ActorRef<QueryRequest>>> owners = local.isPresent()
        ? CompletableFuture.completedFuture(Set.of(local.get()))
        : directory.owners(a.id).toCompletableFuture().orTimeout(remainingMillis, TimeUnit.MILLISECONDS);
    owners.whenComplete((found, e) -> {
      if (e != null || found.isEmpty()) {
        a.lastFailure = e != null ? e.toString() : "no node serves it";
        a.notReachedAt = Long.MIN_VALUE;
        again(a, pauseMillis);
        return;
      }
      long attemptMillis = Math.min(remainingMillis, settings.query().attemptTimeout().toMillis());
      // The keeper gives up waiting for the bound before the ask does (by more than the scheduler's
      // 10 ms tick), so its reason arrives.
      long waitMillis = attemptMillis - Math.max(25, Math.min(100, attemptMillis / 5));
      List<CompletableFuture<QueryReply>> asks = new ArrayList<>(found.size());
      AtomicLong notReachedAt = new AtomicLong(Long.MIN_VALUE);   // the verdict of this attempt's owners
      for (ActorRef<QueryRequest> owner : found) {
        asks.add(AskPattern.<QueryRequest, QueryReply>ask(owner,
            replyTo -> new QueryRequest(a.id, a.query, a.minNextOffset, waitMillis, replyTo),
            Duration.ofMillis(attemptMillis), system.scheduler()).toCompletableFuture()
            .whenComplete((reply, failure) -> onReply(a, owner, reply, failure, notReachedAt)));
      }
      CompletableFuture.allOf(asks.toArray(CompletableFuture[]::new)).whenComplete((done, failure) -> {
        a.notReachedAt = notReachedAt.get();
        again(a, pauseMillis);
      });
    });
  }

  private <R> void onReply(Attempts<R> a, ActorRef<QueryRequest> owner, QueryReply reply, Throwable failure,
      AtomicLong notReachedAt) {
    if (failure != null) {
      Throwable cause = failure.getCause() != null && !(failure instanceof TimeoutException) ? failure.getCause()
          : failure;
      a.lastFailure = "the owner at " + owner.path().address() + " did not answer (" + cause.getClass().getSimpleName()
          + ")";
    } else if (reply instanceof QueryReply.Answer answer && !answer.partition().equals(a.id)) {
      a.lastFailure = "the keeper at " + owner.path() + " answered for " + answer.partition().qualifiedName();
    } else if (reply instanceof QueryReply.Answer answer) {
      @SuppressWarnings("unchecked")
      R r = (R) answer.reply();
      a.result.complete(new QueryResult<>(r, answer.partition(), answer.node(), answer.nextOffset(),
          answer.incarnation(), answer.node().equals(system.address().toString())));
    } else if (reply instanceof QueryReply.Refusal refusal) {
      switch (refusal.kind()) {
        case FAILED -> a.result.completeExceptionally(new QueryFailedException(a.id.qualifiedName(),
            refusal.causeClass(), refusal.message()));
        case NOT_REACHED -> {
          notReachedAt.accumulateAndGet(refusal.nextOffset(), Math::max);
          a.lastFailure = "the owner at " + owner.path().address() + " is at next offset " + refusal.nextOffset();
        }
        case NOT_OWNER -> a.lastFailure = "the node at " + owner.path().address() + " no longer owns it";
        default -> throw new IllegalStateException("unknown refusal " + refusal.kind());
      }
    }
  }

  /** Another attempt after a pause (doubling up to 200 ms), unless the query completed or its time is up. */
  private <R> void again(Attempts<R> a, long pauseMillis) {
    if (a.result.isDone()) {
      return;
    }
    long remainingMillis = TimeUnit.NANOSECONDS.toMillis(a.deadlineNanos - System.nanoTime());
    if (remainingMillis <= 0) {
      giveUp(a);
      return;
    }
    long pause = Math.min(pauseMillis, remainingMillis);
    system.scheduler().scheduleOnce(Duration.ofMillis(pause),
        () -> attempt(a, Math.min(2 * pauseMillis, MAX_PAUSE_MILLIS)), system.executionContext());
  }

  private <R> void giveUp(Attempts<R> a) {
    long notReachedAt = a.notReachedAt;
    a.result.completeExceptionally(notReachedAt != Long.MIN_VALUE
        ? new PositionNotReachedException(a.id.qualifiedName(), notReachedAt, a.minNextOffset, a.timeout.toMillis())
        : new PartitionMovingException(a.id.qualifiedName(), directory.noOwnerSince(a.id, a.startedAt), a.timeout,
            a.lastFailure));
  }

  void close() {
    directory.close();
  }
}
