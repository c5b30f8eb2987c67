package io.fencepost.kafka;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;
import java.util.function.Function;

import io.fencepost.PartitionId;
import io.fencepost.Query;
import io.fencepost.errors.PartitionMovingException;
import io.fencepost.errors.PositionNotReachedException;
import io.fencepost.errors.QueryFailedException;
import io.fencepost.errors.RetriableException;
import io.fencepost.kafka.internal.NodeNames;
import io.fencepost.kafka.internal.QueryReply;
import io.fencepost.kafka.internal.QueryRequest;
import org.apache.kafka.common.utils.Utils;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.javadsl.AskPattern;

/**
 * Routes a query to the keeper of its partition: this node's own when it owns the partition, else
 * the ones the {@link PartitionDirectory} lists. One attempt asks every listed keeper (two during a
 * move) and takes the first answer; an attempt without one (no owner listed, an owner that no longer
 * owns the partition or does not answer within {@code query.attempt-timeout}, a bound not reached)
 * is followed by another, after a short pause, until the query's timeout.
 */
final class QueryRouter {

  /** The dispatcher queries are answered and routed on (reference.conf). */
  static final String DISPATCHER = "fencepost.query-dispatcher";

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
  private final Membership membership;
  private final String node;
  /** Where routing continues: the query dispatcher, never a Kafka or receptionist thread. */
  private final Executor executor;

  QueryRouter(ActorSystem<?> system, PipelineSettings settings, PartitionHost host, PartitionDirectory directory,
      TopicPartitionCounts counts) {
    this.system = system;
    this.settings = settings;
    this.host = host;
    this.directory = directory;
    this.counts = counts;
    this.codecs = new QueryCodecs(system);
    this.membership = Membership.of(system);
    this.node = NodeNames.of(system);
    this.executor = system.dispatchers().lookup(DispatcherSelector.fromConfig(DISPATCHER));
  }

  CompletionStage<PartitionId> partitionOf(QueryTarget target) {
    if (!settings.topics().contains(target.topic())) {
      return CompletableFuture.failedFuture(new IllegalArgumentException("[" + settings.name() + "] consumes "
          + settings.topics() + ", not [" + target.topic() + "]: a query names a topic of its pipeline"));
    }
    // Continued on the query dispatcher when the count is read from Kafka first: never on the admin
    // client's network thread (a session's query would be routed, and answered, there).
    CompletableFuture<Integer> count = counts.of(target.topic()).toCompletableFuture();
    Function<Integer, PartitionId> toPartition = n -> {
      int partition = target.partition().isPresent() ? target.partition().getAsInt()
          : Utils.toPositive(Utils.murmur2(target.serializedKey().orElseThrow())) % n;
      if (partition >= n) {
        throw new IllegalArgumentException("[" + settings.name() + "] topic [" + target.topic() + "] has " + n
            + " partitions: partition " + partition + " does not exist");
      }
      return new PartitionId(settings.groupId(), target.topic(), partition);
    };
    return count.isDone() ? count.thenApply(toPartition) : count.thenApplyAsync(toPartition, executor);
  }

  <R> CompletionStage<QueryResult<R>> query(QueryTarget target, Query<R> query, QueryOptions options) {
    Optional<String> unserializable = codecs.unserializable(query, "query");
    if (unserializable.isPresent()) {
      return CompletableFuture.failedFuture(new IllegalArgumentException(unserializable.get()));
    }
    Duration timeout = options.timeout().orElse(settings.query().timeout());
    long deadline = System.nanoTime() + timeout.toNanos();
    Instant startedAt = Instant.now();
    CompletableFuture<QueryResult<R>> result = new CompletableFuture<>();
    CompletableFuture<PartitionId> partition = partitionOf(target).toCompletableFuture();
    BiConsumer<PartitionId, Throwable> route = (id, e) -> {
      if (e != null) {
        Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
        result.completeExceptionally(cause instanceof TimeoutException
            ? new RetriableException("[" + settings.name() + "] the partition count of topic [" + target.topic()
                + "] could not be read from Kafka within " + timeout.toMillis() + " ms")
            : cause);
        return;
      }
      Attempts<R> attempts = new Attempts<>(id, query, options.minNextOffset(), deadline, startedAt, timeout, result);
      if (answeredHere(attempts)) {
        return;
      }
      // A backstop on the JDK's own timer, cancelled when the query ends: whatever happens to Pekko's
      // scheduler (a system shutting down) or to a callback, the query ends within its timeout and a second.
      CompletableFuture<Void> backstop = new CompletableFuture<Void>().completeOnTimeout(null,
          TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()) + 1_000, TimeUnit.MILLISECONDS);
      backstop.thenRunAsync(() -> giveUp(attempts), executor);
      result.whenComplete((r, failure) -> backstop.cancel(false));
      attempt(attempts, FIRST_PAUSE_MILLIS);
    };
    if (partition.isDone()) {
      // The usual case (the topic's partition count is known): routed on the caller's thread, where a
      // query this node can answer at once is answered, without a hop to another thread.
      partition.whenComplete((id, e) -> guardedRoute(route, id, e, result));
    } else {
      partition.orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS)
          .whenCompleteAsync((id, e) -> guardedRoute(route, id, e, result), executor);
    }
    return result;
  }

  private static <R> void guardedRoute(BiConsumer<PartitionId, Throwable> route, PartitionId id, Throwable e,
      CompletableFuture<QueryResult<R>> result) {
    try {
      route.accept(id, e);
    } catch (VirtualMachineError failure) {
      result.completeExceptionally(failure);
      throw failure;
    } catch (Throwable failure) {   // whatever it was, the query ends: nothing else would complete it
      result.completeExceptionally(failure);
    }
  }

  /**
   * Answers the query from this node's own partition when its newest state meets the bound: no actor,
   * no hop. False when the query needs its attempts (the partition runs elsewhere, its state is behind
   * the bound, it is leaving, or its answer is a refusal, which the attempts then hear from every owner).
   */
  private <R> boolean answeredHere(Attempts<R> a) {
    Optional<PartitionViews.Local> local = host.localViews(a.id);
    if (local.isEmpty()) {
      return false;
    }
    Optional<QueryReply> reply = local.get().latest().answerNow(a.id, a.query, a.minNextOffset);
    return reply.isPresent() && reply.get() instanceof QueryReply.Answer answer
        && a.result.complete(result(answer, membership.localOnly().isPresent()));
  }

  /** The query's result from an owner's answer. */
  private <R> QueryResult<R> result(QueryReply.Answer answer, boolean localOnly) {
    @SuppressWarnings("unchecked")
    R r = (R) answer.reply();
    return new QueryResult<>(r, answer.partition(), answer.node(), answer.nextOffset(), answer.incarnation(),
        answer.node().equals(node), localOnly);
  }

  /** One query's attempts; its result completes once. */
  private static final class Attempts<R> {
    final PartitionId id;
    final Query<R> query;
    final long minNextOffset;
    final long deadlineNanos;
    final Instant startedAt;
    final Duration timeout;
    final CompletableFuture<QueryResult<R>> result;
    volatile String lastFailure = "";
    /** The last completed attempt's highest NOT_REACHED offset ({@code MIN_VALUE}: none said so). */
    volatile long notReachedAt = Long.MIN_VALUE;
    /** The last completed attempt's FAILED refusal, when no owner answered. */
    volatile QueryFailedException failed;
    volatile int attempts;
    /** Whether an attempt asked an owner (which did not answer, or no longer owned the partition). */
    volatile boolean ownerAsked;
    /** Why the current attempt asks this node's own keeper only, or {@code null}: it asks the cluster too. */
    volatile String localOnly;

    Attempts(PartitionId id, Query<R> query, long minNextOffset, long deadlineNanos, Instant startedAt,
        Duration timeout, CompletableFuture<QueryResult<R>> result) {
      this.id = id;
      this.query = query;
      this.minNextOffset = minNextOffset;
      this.deadlineNanos = deadlineNanos;
      this.startedAt = startedAt;
      this.timeout = timeout;
      this.result = result;
    }

    long remainingMillis() {
      return TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
    }
  }

  /** Runs {@code step}; a failure of the routing itself fails the query instead of leaving it hanging. */
  private static <R> void guarded(Attempts<R> a, Runnable step) {
    try {
      step.run();
    } catch (RuntimeException e) {
      a.result.completeExceptionally(e);
    }
  }

  private <R> void attempt(Attempts<R> a, long pauseMillis) {
    guarded(a, () -> {
      long remaining = a.remainingMillis();
      if (a.result.isDone()) {
        return;
      }
      if (remaining <= 0 || remaining < MIN_ATTEMPT_MILLIS && a.attempts > 0) {
        giveUp(a);
        return;
      }
      a.attempts++;
      // The directory's owners, and this node's own keeper when the partition runs here (a node that
      // lost the partition without noticing yet asks the new owner too). A node that is not a cluster
      // member now (its membership restarts) asks its own keeper only, and says so.
      Optional<ActorRef<QueryRequest>> local = host.localViews(a.id).map(PartitionViews.Local::actor);
      Optional<String> localOnly = membership.localOnly();
      a.localOnly = localOnly.orElse(null);
      CompletableFuture<Set<ActorRef<QueryRequest>>> listed = localOnly.isPresent() || membership.cluster().isEmpty()
          ? CompletableFuture.completedFuture(Set.of())
          : directory.owners(a.id).toCompletableFuture().orTimeout(
              Math.min(remaining, settings.query().attemptTimeout().toMillis()), TimeUnit.MILLISECONDS);
      BiFunction<Set<ActorRef<QueryRequest>>, Throwable, Set<ActorRef<QueryRequest>>> withLocal = (owners, e) -> {
        Set<ActorRef<QueryRequest>> all = new HashSet<>(e == null ? owners : Set.of());
        local.ifPresent(all::add);
        return all;
      };
      // A listing that was not there yet completes on a receptionist thread or, timed out, on the JDK's
      // timer thread: continue on the query dispatcher (a query given up completes there).
      (listed.isDone() ? listed.handle(withLocal) : listed.handleAsync(withLocal, executor))
          .thenAccept(owners -> guarded(a, () -> ask(a, owners, pauseMillis)));
    });
  }

  private <R> void ask(Attempts<R> a, Set<ActorRef<QueryRequest>> owners, long pauseMillis) {
    long remaining = a.remainingMillis();
    if (owners.isEmpty() || remaining <= 0) {
      a.lastFailure = a.localOnly != null ? a.localOnly : "no node serves it";
      a.notReachedAt = Long.MIN_VALUE;
      a.failed = null;
      again(a, pauseMillis);
      return;
    }
    a.ownerAsked = true;
    long attemptMillis = Math.min(remaining, settings.query().attemptTimeout().toMillis());
    // The owner gives up waiting for the bound before the ask does (by more than the scheduler's
    // 10 ms tick), so its reason arrives.
    long waitMillis = attemptMillis - Math.max(25, Math.min(100, attemptMillis / 5));
    Verdict verdict = new Verdict();
    List<CompletableFuture<QueryReply>> asks = new ArrayList<>(owners.size());
    for (ActorRef<QueryRequest> owner : owners) {
      asks.add(ask(owner, a, waitMillis, attemptMillis)
          .whenComplete((reply, failure) -> guarded(a, () -> onReply(a, owner, reply, failure, verdict))));
    }
    CompletableFuture.allOf(asks.toArray(CompletableFuture[]::new)).whenComplete((done, failure) -> {
      if (a.result.isDone()) {
        return;   // answered: no hop to take
      }
      executor.execute(() -> guarded(a, () -> {
        a.notReachedAt = verdict.notReachedAt.get();
        a.failed = verdict.failed;
        if (a.failed != null && a.notReachedAt == Long.MIN_VALUE) {
          a.result.completeExceptionally(a.failed);   // no owner answered, one said onQuery fails: final
        }
        again(a, pauseMillis);
      }));
    });
  }

  /**
   * Asks one owner: bounded by the JDK's timer too (for a listed owner, the ask's own timeout runs on
   * the cluster membership's scheduler, which stops when the cluster downs the node), continuing on
   * the query dispatcher; an ask that cannot start fails like an owner that did not answer.
   */
  private CompletableFuture<QueryReply> ask(ActorRef<QueryRequest> owner, Attempts<?> a, long waitMillis,
      long attemptMillis) {
    return Stages.bounded(() -> AskPattern.<QueryRequest, QueryReply>ask(owner,
        replyTo -> new QueryRequest(a.id, a.query, a.minNextOffset, waitMillis, replyTo),
        Duration.ofMillis(attemptMillis), system.scheduler()), attemptMillis + 100, executor);
  }

  /** What the owners of one attempt said, short of an answer. */
  private static final class Verdict {
    final AtomicLong notReachedAt = new AtomicLong(Long.MIN_VALUE);
    volatile QueryFailedException failed;
  }

  private <R> void onReply(Attempts<R> a, ActorRef<QueryRequest> owner, QueryReply reply, Throwable failure,
      Verdict verdict) {
    if (failure != null) {
      Throwable cause = failure.getCause() != null && !(failure instanceof TimeoutException) ? failure.getCause()
          : failure;
      a.lastFailure = "the owner at " + owner.path().address() + " did not answer (" + cause.getClass().getSimpleName()
          + ")";
    } else if (reply instanceof QueryReply.Answer answer && !answer.partition().equals(a.id)) {
      a.lastFailure = "the keeper at " + owner.path() + " answered for " + answer.partition().qualifiedName();
    } else if (reply instanceof QueryReply.Answer answer) {
      a.result.complete(result(answer, a.localOnly != null));
    } else if (reply instanceof QueryReply.Refusal refusal) {
      switch (refusal.kind()) {
        case FAILED -> verdict.failed = new QueryFailedException(a.id.qualifiedName(), refusal.causeClass(),
            refusal.message());
        case NOT_REACHED -> {
          verdict.notReachedAt.accumulateAndGet(refusal.nextOffset(), Math::max);
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
    long remaining = a.remainingMillis();
    if (remaining <= 0) {
      giveUp(a);
      return;
    }
    CompletableFuture.delayedExecutor(Math.min(pauseMillis, remaining), TimeUnit.MILLISECONDS, executor)
        .execute(() -> attempt(a, Math.min(2 * pauseMillis, MAX_PAUSE_MILLIS)));
  }

  private <R> void giveUp(Attempts<R> a) {
    if (a.result.isDone()) {
      return;
    }
    long notReachedAt = a.notReachedAt;
    a.result.completeExceptionally(notReachedAt != Long.MIN_VALUE
        ? new PositionNotReachedException(a.id.qualifiedName(), notReachedAt, a.minNextOffset, a.timeout.toMillis())
        : new PartitionMovingException(a.id.qualifiedName(), a.ownerAsked ? a.startedAt
            : directory.noOwnerSince(a.id).orElse(a.startedAt), a.ownerAsked, a.timeout,
            a.lastFailure));
  }

  void close() {
    directory.close();
  }
}
