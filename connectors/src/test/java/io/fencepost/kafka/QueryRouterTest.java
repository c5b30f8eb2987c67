package io.fencepost.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import com.typesafe.config.ConfigFactory;
import io.fencepost.AppliedView;
import io.fencepost.JacksonSerializable;
import io.fencepost.PartitionCommand;
import io.fencepost.PartitionId;
import io.fencepost.Query;
import io.fencepost.errors.PartitionMovingException;
import io.fencepost.errors.PositionNotReachedException;
import io.fencepost.errors.QueryFailedException;
import io.fencepost.kafka.internal.QueryRequest;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Queries routed on one actor system (the local receptionist stands for the cluster's): the owner
 * answers from its published state, a bound is waited for, a move is retried, a session never goes
 * back, and each failure is the exception that names it. Partition actors are stand-ins that publish
 * a state at an offset the test sets.
 */
class QueryRouterTest {

  private static final ActorTestKit kit = ActorTestKit.create(ConfigFactory.parseString(
      "pekko.actor.provider = local").withFallback(ConfigFactory.load()));
  private static final String TOPIC = "payments";

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  record Ask(String what) implements Query<String>, JacksonSerializable {
  }

  /** Not serializable between nodes: no serializer is bound to it. */
  record Plain() implements Query<String> {
  }

  /** One node's stand-ins: each partition's state is at the offset {@link #offsets} holds; a command republishes it. */
  static final class Node {
    final Map<Integer, AtomicLong> offsets = new ConcurrentHashMap<>();
    final ActorSystem<?> system;
    final PartitionHost host;

    Node(String pipeline) {
      this(kit.system(), pipeline);
    }

    Node(ActorSystem<?> system, String pipeline) {
      this.system = system;
      host = new PartitionHost(system, pipeline, this::standIn, Duration.ofSeconds(5));
    }

    private Behavior<PartitionCommand> standIn(PartitionId id, java.util.function.Consumer<AppliedView> views) {
      AtomicLong offset = offsets.computeIfAbsent(id.partition(), p -> new AtomicLong(10));
      return Behaviors.setup(ctx -> {
        views.accept(view(id, offset.get()));
        return Behaviors.receive(PartitionCommand.class)
            .onMessage(PartitionCommand.Stop.class, s -> Behaviors.stopped())
            .onAnyMessage(m -> {
              views.accept(view(id, offset.get()));
              return Behaviors.same();
            })
            .build();
      });
    }

    private static AppliedView view(PartitionId id, long next) {
      return new AppliedView(id, next, "inc-" + next, q -> {
        if (q instanceof Ask a && a.what().equals("boom")) {
          throw new IllegalStateException("no such thing");
        }
        return q instanceof Ask a ? a.what() + "@" + next : null;
      });
    }

    /** Admits the partition and starts its actor, as a pipeline does (it asks the actor's status). */
    void own(PartitionId id) throws Exception {
      host.admit(id);
      host.actor(id).toCompletableFuture().get(5, TimeUnit.SECONDS)
          .tell(new PartitionCommand.GetStatus(system.ignoreRef()));
    }

    /** {@link #own}, then waits until the actor's first state reached the partition's newest view. */
    void ownWithState(PartitionId id) throws Exception {
      own(id);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (host.localViews(id).map(l -> l.latest().view()).isEmpty() && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
    }

    /** Sets the partition's offset and has its actor publish it. */
    void advance(PartitionId id, long next) throws Exception {
      offsets.get(id.partition()).set(next);
      host.actor(id).toCompletableFuture().get(5, TimeUnit.SECONDS)
          .tell(new PartitionCommand.GetStatus(system.ignoreRef()));
    }

    QueryRouter router(PipelineSettings settings) {
      return new QueryRouter(system, settings, host, new PartitionDirectory(Membership.of(system), settings.name()),
          new TopicPartitionCounts(topic -> CompletableFuture.completedFuture(4), Ticker.SYSTEM));
    }
  }

  static PipelineSettings settings(String name) {
    return PipelineSettings.create(kit.system(), name).withTopics(List.of(TOPIC)).withBootstrapServers("unused:9092")
        .withGroupId(name);   // each test its own group: its partitions are its own in the shared receptionist
  }

  private static PartitionId partition(String group, int p) {
    return new PartitionId(group, TOPIC, p);
  }

  private static <T> T get(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private static Throwable failure(CompletionStage<?> stage) {
    ExecutionException e = assertThrows(ExecutionException.class, () -> get(stage));
    return e.getCause();
  }

  @Test
  void theOwnerOnThisNodeAnswersFromItsPublishedState() throws Exception {
    Node node = new Node("q1");
    node.own(partition("q1", 2));
    QueryResult<String> r = get(node.router(settings("q1")).query(QueryTarget.partition(TOPIC, 2), new Ask("hi"),
        QueryOptions.defaults()));
    assertEquals("hi@10", r.reply());
    assertEquals(partition("q1", 2), r.partition());
    assertEquals(10, r.appliedNextOffset());
    assertEquals("inc-10", r.incarnation());
    assertEquals(kit.system().address().toString(), r.node());
    assertTrue(r.local());
  }

  @Test
  void aNodeThatDoesNotOwnThePartitionAsksItsOwnerThroughTheReceptionist() throws Exception {
    Node owner = new Node("q2");
    Node other = new Node("q2");
    owner.own(partition("q2", 1));
    QueryResult<String> r = get(other.router(settings("q2")).query(QueryTarget.partition(TOPIC, 1), new Ask("x"),
        QueryOptions.defaults()));
    assertEquals("x@10", r.reply());
    assertFalse(other.host.localViews(partition("q2", 1)).isPresent(), "the asking node owns nothing");
  }

  @Test
  void oneNodeFollowsTheOwnersOfManyPartitionsAsTheyMove() throws Exception {
    Node first = new Node("q11");
    Node second = new Node("q11");
    Node asker = new Node("q11");
    for (int p = 0; p < 3; p++) {
      first.own(partition("q11", p));
    }
    QueryRouter router = asker.router(settings("q11"));
    for (int p = 0; p < 3; p++) {
      assertEquals("a@10", get(router.query(QueryTarget.partition(TOPIC, p), new Ask("a"), QueryOptions.defaults()))
          .reply());
    }
    for (int p = 0; p < 3; p++) {   // every partition moves; the asker follows each of them
      get(first.host.stop(partition("q11", p)));
      second.offsets.put(p, new AtomicLong(20 + p));
      second.own(partition("q11", p));
    }
    for (int p = 0; p < 3; p++) {
      QueryResult<String> r = get(router.query(QueryTarget.partition(TOPIC, p), new Ask("a"),
          QueryOptions.defaults().afterOffset(19 + p)));
      assertEquals("a@" + (20 + p), r.reply());
    }
  }

  @Test
  void aQueryNeverStartsThePartitionsActor() throws Exception {
    Node node = new Node("q12");
    node.host.admit(partition("q12", 0));   // admitted, its actor not started (no status asked)
    Throwable e = failure(node.router(settings("q12")).query(QueryTarget.partition(TOPIC, 0), new Ask("x"),
        QueryOptions.defaults().withTimeout(Duration.ofMillis(300))));
    assertInstanceOf(PositionNotReachedException.class, e, e.getMessage());
    assertEquals(-1, ((PositionNotReachedException) e).appliedNextOffset());
    assertEquals(0, node.offsets.size(), "no incarnation started");
  }

  /**
   * Pekko answers an ask with Scala's CompletionStage, which runs even non-async callbacks on the JDK's
   * common pool; with one common-pool worker (2 cores) that is a new thread per callback. Routing
   * continues on the query dispatcher instead: 300 queries start (almost) no thread.
   */
  @Test
  void queriesStartNoThreadOfTheirOwn() throws Exception {
    Node node = new Node("q13");
    node.own(partition("q13", 0));
    QueryRouter router = node.router(settings("q13"));
    get(router.query(QueryTarget.partition(TOPIC, 0), new Ask("warm"), QueryOptions.defaults()));
    java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
    long before = threads.getTotalStartedThreadCount();
    for (int i = 0; i < 300; i++) {
      get(router.query(QueryTarget.partition(TOPIC, 0), new Ask("n"), QueryOptions.defaults()));
    }
    long started = threads.getTotalStartedThreadCount() - before;
    assertTrue(started < 30, started + " threads started by 300 queries");
  }

  /**
   * A query whose bound this node's own newest state meets is answered on the caller's thread: no
   * actor, no hop (on 2 cores a hop costs more than the answer). One above it still goes to the actor.
   */
  @Test
  void aQueryTheLocalStateMeetsIsAnsweredBeforeQueryReturns() throws Exception {
    Node node = new Node("q14");
    PartitionId id = partition("q14", 0);
    node.ownWithState(id);
    QueryRouter router = node.router(settings("q14"));
    CompletableFuture<QueryResult<String>> now = router.query(QueryTarget.partition(TOPIC, 0), new Ask("n"),
        QueryOptions.defaults().afterOffset(9)).toCompletableFuture();
    assertTrue(now.isDone(), "answered on the caller's thread");
    assertEquals("n@10", now.get().reply());
    assertTrue(now.get().local());
    CompletableFuture<QueryResult<String>> later = router.query(QueryTarget.partition(TOPIC, 0), new Ask("n"),
        QueryOptions.defaults().afterOffset(10)).toCompletableFuture();
    assertFalse(later.isDone(), "a bound the state does not meet was answered at once");
    node.advance(id, 11);
    assertEquals("n@11", get(later).reply());
  }

  /** Once the host is told to stop a partition, its newest state answers no one, other nodes included. */
  @Test
  void aStoppingPartitionsStateAnswersNothingFromTheMomentItIsToldToStop() throws Exception {
    Node node = new Node("q16");
    PartitionId id = partition("q16", 0);
    node.ownWithState(id);
    PartitionViews.Local local = node.host.localViews(id).orElseThrow();
    assertTrue(local.latest().answerNow(id, new Ask("x"), -1).isPresent());
    node.host.stop(id);
    assertEquals(java.util.Optional.empty(), local.latest().answerNow(id, new Ask("x"), -1));
  }

  @Test
  void aKeyIsMappedToThePartitionKafkasDefaultPartitionerPicks() throws Exception {
    QueryRouter router = new Node("q3").router(settings("q3"));
    for (String key : List.of("m-1", "m-2", "merchant-42", "", "é")) {
      int expected = BuiltInPartitioner.partitionForKey(key.getBytes(StandardCharsets.UTF_8), 4);
      assertEquals(partition("q3", expected), get(router.partitionOf(QueryTarget.key(TOPIC, key))), key);
    }
  }

  @Test
  void aTopicThePipelineDoesNotConsumeOrAPartitionItDoesNotHaveIsRefused() {
    QueryRouter router = new Node("q4").router(settings("q4"));
    Throwable topic = failure(router.query(QueryTarget.partition("other", 0), new Ask("x"), QueryOptions.defaults()));
    assertInstanceOf(IllegalArgumentException.class, topic);
    assertEquals("[q4] consumes [payments], not [other]: a query names a topic of its pipeline", topic.getMessage());
    Throwable partition = failure(router.query(QueryTarget.partition(TOPIC, 4), new Ask("x"),
        QueryOptions.defaults()));
    assertEquals("[q4] topic [payments] has 4 partitions: partition 4 does not exist", partition.getMessage());
  }

  @Test
  void aBoundAboveTheAppliedStateIsWaitedForAndAnsweredOnceReached() throws Exception {
    Node node = new Node("q5");
    node.own(partition("q5", 0));
    CompletionStage<QueryResult<String>> answer = node.router(settings("q5")).query(QueryTarget.partition(TOPIC, 0),
        new Ask("b"), QueryOptions.defaults().afterOffset(14));
    Thread.sleep(200);   // (not a wait for a condition: the answer must not come before the offset moved)
    assertFalse(answer.toCompletableFuture().isDone(), "answered from a state without offset 14");
    node.advance(partition("q5", 0), 15);
    QueryResult<String> r = get(answer);
    assertEquals("b@15", r.reply());
    assertEquals(15, r.appliedNextOffset());
  }

  @Test
  void aBoundNotReachedWithinTheTimeoutFailsNamingBothOffsets() throws Exception {
    Node node = new Node("q6");
    node.own(partition("q6", 0));
    Throwable e = failure(node.router(settings("q6")).query(QueryTarget.partition(TOPIC, 0), new Ask("b"),
        QueryOptions.defaults().afterOffset(10).withTimeout(Duration.ofMillis(400))));
    assertInstanceOf(PositionNotReachedException.class, e, e.getMessage());
    assertEquals("[q6|payments|0] applied state is at next offset 10, the query needs 11 or more; not reached within "
        + "400 ms", e.getMessage());
  }

  @Test
  void aPartitionWithoutOwnerFailsAsMovingWithinTheTimeout() {
    Node node = new Node("q7");
    long start = System.nanoTime();
    Throwable e = failure(node.router(settings("q7")).query(QueryTarget.partition(TOPIC, 3), new Ask("m"),
        QueryOptions.defaults().withTimeout(Duration.ofMillis(300))));
    long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertInstanceOf(PartitionMovingException.class, e);
    assertTrue(e.getMessage().startsWith("[q7|payments|3] partition is moving: no owner answered within 300 ms (no "
        + "owner known since "), e.getMessage());
    assertTrue(e.getMessage().endsWith("; last attempt: no node serves it"), e.getMessage());
    assertTrue(tookMillis >= 300 && tookMillis < 3000, "took " + tookMillis + " ms");
  }

  @Test
  void anOwnerListedButSilentFailsAsMovingSayingItWasAsked() {
    Node node = new Node("q15");
    kit.system().receptionist().tell(Receptionist.register(PartitionDirectory.key(partition("q15", 1)),
        kit.<QueryRequest>spawn(Behaviors.ignore())));
    Throwable e = failure(node.router(settings("q15")).query(QueryTarget.partition(TOPIC, 1), new Ask("m"),
        QueryOptions.defaults().withTimeout(Duration.ofMillis(400))));
    assertInstanceOf(PartitionMovingException.class, e);
    assertTrue(e.getMessage().startsWith("[q15|payments|1] partition is moving: no owner answered within 400 ms "
        + "(owners were asked since "), e.getMessage());
    assertTrue(e.getMessage().contains("; last attempt: the owner at pekko://"), e.getMessage());
    assertTrue(e.getMessage().endsWith(" did not answer (TimeoutException)"), e.getMessage());
  }

  @Test
  void aQueryDuringAMoveIsAnsweredByTheNextOwner() throws Exception {
    Node first = new Node("q8");
    Node second = new Node("q8");
    Node asker = new Node("q8");
    first.own(partition("q8", 0));
    QueryRouter router = asker.router(settings("q8"));
    assertEquals("a@10", get(router.query(QueryTarget.partition(TOPIC, 0), new Ask("a"), QueryOptions.defaults()))
        .reply());
    get(first.host.stop(partition("q8", 0)));
    CompletionStage<QueryResult<String>> during = router.query(QueryTarget.partition(TOPIC, 0), new Ask("a"),
        QueryOptions.defaults().withTimeout(Duration.ofSeconds(5)));
    second.offsets.put(0, new AtomicLong(12));
    second.own(partition("q8", 0));
    assertEquals("a@12", get(during).reply());
  }

  @Test
  void aSessionIsNeverAnsweredFromAStateOlderThanOneItSaw() throws Exception {
    Node owner = new Node("q9");
    Node zombie = new Node("q9");
    Node asker = new Node("q9");
    owner.offsets.put(0, new AtomicLong(20));
    owner.own(partition("q9", 0));
    Pipeline pipeline = new RouterPipeline(asker.router(settings("q9")));
    QuerySession session = pipeline.newSession();
    assertEquals(20, get(session.query(QueryTarget.partition(TOPIC, 0), new Ask("s"))).appliedNextOffset());
    get(owner.host.stop(partition("q9", 0)));
    zombie.own(partition("q9", 0));   // at offset 10: an older state
    Throwable e = failure(session.query(QueryTarget.partition(TOPIC, 0), new Ask("s"),
        QueryOptions.defaults().withTimeout(Duration.ofMillis(500))));
    assertInstanceOf(PositionNotReachedException.class, e, e.getMessage());
    assertEquals(20, ((PositionNotReachedException) e).requiredNextOffset());
    assertEquals(10, get(pipeline.query(QueryTarget.partition(TOPIC, 0), new Ask("s"))).appliedNextOffset(),
        "without the session the older state answers");
    assertEquals(20, session.lastSeen(partition("q9", 0)));
  }

  @Test
  void onQueryFailingOrAnUnserializableQueryFailsTheQueryNamingWhy() throws Exception {
    Node node = new Node("q10");
    node.own(partition("q10", 0));
    QueryRouter router = node.router(settings("q10"));
    Throwable failed = failure(router.query(QueryTarget.partition(TOPIC, 0), new Ask("boom"), QueryOptions.defaults()));
    assertInstanceOf(QueryFailedException.class, failed);
    assertEquals("[q10|payments|0] query failed: java.lang.IllegalStateException: no such thing", failed.getMessage());
    Throwable plain = failure(router.query(QueryTarget.partition(TOPIC, 0), new Plain(), QueryOptions.defaults()));
    assertInstanceOf(IllegalArgumentException.class, plain);
    assertEquals("a query of class " + Plain.class.getName() + " has no serializer: implement "
        + "io.fencepost.JacksonSerializable or bind a serializer to it under pekko.actor.serialization-bindings",
        plain.getMessage());
  }

  /** The pipeline surface of a router, for sessions. */
  private record RouterPipeline(QueryRouter router) implements Pipeline {
    @Override
    public <R> CompletionStage<QueryResult<R>> query(QueryTarget target, Query<R> query, QueryOptions options) {
      return router.query(target, query, options);
    }

    @Override
    public CompletionStage<PartitionId> partitionOf(QueryTarget target) {
      return router.partitionOf(target);
    }

    @Override
    public String name() {
      return "router";
    }

    @Override
    public io.fencepost.GuaranteeStatement guarantee() {
      throw new UnsupportedOperationException();
    }

    @Override
    public CompletionStage<List<PartitionView>> status() {
      throw new UnsupportedOperationException();
    }

    @Override
    public CompletionStage<List<PartitionView>> clusterStatus() {
      throw new UnsupportedOperationException();
    }

    @Override
    public PipelineHealth health() {
      throw new UnsupportedOperationException();
    }

    @Override
    public CompletionStage<org.apache.pekko.Done> stop() {
      throw new UnsupportedOperationException();
    }
  }
}
