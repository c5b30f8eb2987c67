package io.fencepost.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.fencepost.PartitionCommand;
import io.fencepost.PartitionId;
import io.fencepost.PartitionStatus;
import org.apache.pekko.actor.DeadLetter;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.eventstream.EventStream;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The host's rules with stand-in partition behaviors: nothing runs for a partition not admitted,
 * one incarnation at a time per partition, a new one only after the previous one stopped, and an
 * actor that stopped on its own (a fenced write) is started again by the next command.
 */
class PartitionHostTest {

  private static final ActorTestKit kit = ActorTestKit.create();
  private static final PartitionId P0 = new PartitionId("g", "t", 0);

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  private static PartitionCommand die() {
    return new PartitionCommand.ApplyBatch(List.of(), kit.system().ignoreRef());
  }

  /** Logs "start N" and "stop N"; answers GetStatus with its incarnation number; an empty ApplyBatch = die. */
  private static Behavior<PartitionCommand> standIn(AtomicInteger incarnations, BlockingQueue<String> events,
      Duration slowStop) {
    return Behaviors.setup(ctx -> {
      int n = incarnations.incrementAndGet();
      events.add("start " + n);
      return Behaviors.withTimers(timers -> Behaviors.receive(PartitionCommand.class)
          .onMessage(PartitionCommand.GetStatus.class, g -> {
            g.replyTo().tell(new PartitionStatus(P0, OptionalLong.of(n), 0, 0, 0, 0, "i" + n, "node", 0));
            return Behaviors.same();
          })
          .onMessage(PartitionCommand.ApplyBatch.class, r -> Behaviors.stopped())
          .onMessage(PartitionCommand.Stop.class, s -> {
            timers.startSingleTimer(die(), slowStop);
            return Behaviors.same();
          })
          .onSignal(PostStop.class, s -> {
            events.add("stop " + n);
            return Behaviors.same();
          })
          .build());
    });
  }

  /**
   * The incarnation that answers. A command that reaches the keeper before it learnt that its actor
   * stopped is lost with the actor's mailbox (as with any actor): ask again until one answers.
   */
  private static long incarnationOf(PartitionHost host) throws Exception {
    ActorRef<PartitionCommand> actor = host.actor(P0).toCompletableFuture().get(5, TimeUnit.SECONDS);
    TestProbe<PartitionStatus> reply = kit.createTestProbe();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (true) {
      actor.tell(new PartitionCommand.GetStatus(reply.getRef()));
      try {
        return reply.receiveMessage(Duration.ofMillis(200)).nextOffset().getAsLong();
      } catch (AssertionError noAnswer) {
        if (System.nanoTime() > deadline) {
          throw noAnswer;
        }
      }
    }
  }

  @Test
  void noActorRunsForAPartitionThatWasNotAdmitted() {
    AtomicInteger incarnations = new AtomicInteger();
    PartitionHost host = new PartitionHost(kit.system(), "p1",
        (id, views) -> standIn(incarnations, new LinkedBlockingQueue<>(), Duration.ZERO), Duration.ofSeconds(5));
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> host.actor(P0).toCompletableFuture().get(5, TimeUnit.SECONDS));
    assertInstanceOf(IllegalStateException.class, e.getCause());
    assertEquals("[p1] partition t-0 is not assigned to this node", e.getCause().getMessage());
    assertEquals(0, incarnations.get());
  }

  @Test
  void anActorThatStoppedOnItsOwnIsStartedAgainByTheNextCommand() throws Exception {
    AtomicInteger incarnations = new AtomicInteger();
    BlockingQueue<String> events = new LinkedBlockingQueue<>();
    PartitionHost host = new PartitionHost(kit.system(), "p2", (id, views) -> standIn(incarnations, events, Duration.ZERO),
        Duration.ofSeconds(5));
    host.admit(P0);
    assertEquals(1, incarnationOf(host));
    host.actor(P0).toCompletableFuture().get(5, TimeUnit.SECONDS).tell(die());
    assertEquals("start 1", events.poll(5, TimeUnit.SECONDS));
    assertEquals("stop 1", events.poll(5, TimeUnit.SECONDS));
    assertEquals(2, incarnationOf(host));
    assertEquals("start 2", events.poll(5, TimeUnit.SECONDS));
    host.stop(P0).toCompletableFuture().get(5, TimeUnit.SECONDS);
    assertEquals("stop 2", events.poll(5, TimeUnit.SECONDS));
  }

  @Test
  void aPartitionAdmittedAgainWhileItsActorStopsGetsANewOneOnlyAfterTheOldOneStopped() throws Exception {
    AtomicInteger incarnations = new AtomicInteger();
    BlockingQueue<String> events = new LinkedBlockingQueue<>();
    PartitionHost host = new PartitionHost(kit.system(), "p3",
        (id, views) -> standIn(incarnations, events, Duration.ofMillis(500)), Duration.ofSeconds(5));
    host.admit(P0);
    assertEquals(1, incarnationOf(host));
    host.stop(P0);
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> host.actor(P0).toCompletableFuture().get(5, TimeUnit.SECONDS));
    assertInstanceOf(IllegalStateException.class, e.getCause(), "a stopping partition is not served");
    host.admit(P0);                                         // assigned again at once
    assertEquals(2, incarnationOf(host));
    assertEquals(List.of("start 1", "stop 1", "start 2"), List.of(events.poll(5, TimeUnit.SECONDS),
        events.poll(5, TimeUnit.SECONDS), events.poll(5, TimeUnit.SECONDS)));
    host.admit(P0);                                         // admitted twice: still one incarnation
    assertEquals(2, incarnationOf(host));
    host.stop(P0).toCompletableFuture().get(5, TimeUnit.SECONDS);
    assertEquals("stop 2", events.poll(5, TimeUnit.SECONDS));
    assertEquals(2, incarnations.get());
  }

  @Test
  void aKeeperThatStoppedInTimeLeavesNoDeadLetterBehind() throws Exception {
    BlockingQueue<Object> deadLetters = new LinkedBlockingQueue<>();
    kit.system().eventStream().tell(new EventStream.Subscribe<>(
        DeadLetter.class, kit.spawn(Behaviors.receive(DeadLetter.class)
            .onAnyMessage(d -> {
              deadLetters.add(d.message());
              return Behaviors.same();
            }).build())));
    AtomicInteger incarnations = new AtomicInteger();
    PartitionHost host = new PartitionHost(kit.system(), "p5",
        (id, views) -> standIn(incarnations, new LinkedBlockingQueue<>(), Duration.ZERO), Duration.ofMillis(300));
    host.admit(P0);
    assertEquals(1, incarnationOf(host));
    host.stop(P0).toCompletableFuture().get(5, TimeUnit.SECONDS);
    // The keeper's stop timer fires after it stopped: its message must not be logged as a dead letter.
    Thread.sleep(800);
    assertTrue(deadLetters.stream().noneMatch(m -> m.getClass().getName().contains("ForceStop")),
        "dead letters: " + deadLetters);
  }

  @Test
  void anActorThatDoesNotStopInTimeIsStoppedAtOnce() throws Exception {
    AtomicInteger incarnations = new AtomicInteger();
    BlockingQueue<String> events = new LinkedBlockingQueue<>();
    PartitionHost host = new PartitionHost(kit.system(), "p4",
        (id, views) -> standIn(incarnations, events, Duration.ofMinutes(10)), Duration.ofMillis(300));
    host.admit(P0);
    assertEquals(1, incarnationOf(host));
    long start = System.nanoTime();
    host.stop(P0).toCompletableFuture().get(5, TimeUnit.SECONDS);
    assertEquals(List.of("start 1", "stop 1"), List.of(events.poll(5, TimeUnit.SECONDS),
        events.poll(5, TimeUnit.SECONDS)));
    assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(300), "stopped at once only after the timeout");
  }
}
