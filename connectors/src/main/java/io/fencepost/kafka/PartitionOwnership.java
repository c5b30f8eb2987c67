package io.fencepost.kafka;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;

import io.fencepost.PartitionId;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ownership state machine of one pipeline on one node. One thread owns the Kafka consumer and
 * handles, strictly in the order Kafka delivers them, every assignment and revocation; nothing
 * another thread computes acts on a partition except through this thread, after checking that the
 * assignment it was computed for is still the current one. This class is that thread's loop (poll,
 * work posted by other threads, commits, a failed consumer replaced with backoff, the stop);
 * {@link Assignments} holds the partitions' life cycle, {@link OwnershipListener} hands it the
 * group's decisions and {@link FlowControl} pauses full streams.
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

  private final PipelineSettings settings;
  private final KafkaClients clients;
  private final Map<String, Object> consumerProperties;
  private final Backoff restartBackoff;
  private final Assignments assignments;
  private final OwnershipListener listener;
  private final Ticker ticker;
  /** Work for the consumer thread, posted by other threads. */
  private final ConcurrentLinkedQueue<Runnable> inbox = new ConcurrentLinkedQueue<>();
  private final CompletableFuture<Done> stopped = new CompletableFuture<>();
  private final Thread thread;
  private volatile boolean stopRequested;
  /** Each turn of the consumer loop, failed ones included: a thread that stops turning is stuck. */
  private volatile long lastTurnNanos;
  /** The consumer's failure while it is being replaced (backoff and rejoin), else null. */
  private volatile String consumerFailure;
  private volatile Consumer<byte[], byte[]> consumer;

  PartitionOwnership(ActorSystem<?> system, PipelineSettings settings, Map<String, Object> consumerProperties,
      KafkaClients clients, OwnershipSeams seams) {
    this.settings = settings;
    this.clients = clients;
    this.consumerProperties = consumerProperties;
    int maxPoll = Integer.parseInt(String.valueOf(consumerProperties.getOrDefault(ConsumerConfig.MAX_POLL_RECORDS_CONFIG,
        "500")));
    this.assignments = new Assignments(system, settings, seams,
        new FlowControl(settings.name(), settings.batch().maxRecords(), maxPoll, seams.ticker()), this::post);
    this.listener = new OwnershipListener(settings.name(), assignments, seams.ticker());
    this.ticker = seams.ticker();
    this.lastTurnNanos = ticker.nanoTime();
    this.restartBackoff = new Backoff(settings.retryBackoff().min(), settings.retryBackoff().max(), 2.0);
    this.thread = new Thread(this::run, "fencepost-consumer-" + settings.name());
    this.thread.setDaemon(true);
  }

  /** Creates and subscribes the consumer here (so that bad settings fail the start), then runs it on its thread. */
  void start() {
    subscribe();
    thread.start();
  }

  private void subscribe() {
    Consumer<byte[], byte[]> c = clients.consumer(consumerProperties);
    consumer = c;   // first: a subscription that fails leaves it to be closed
    assignments.use(c);
    c.subscribe(settings.topics(), listener);
  }

  /** Every partition held here and its assignment's progress (any thread). */
  Map<PartitionId, PartitionProgress> assigned() {
    return assignments.assigned();
  }

  /** Whether the consumer is in its group: it received an assignment (possibly empty) and has not left since. */
  boolean joined() {
    return listener.joined();
  }

  /** Nanoseconds since this node's assignment last changed. */
  long sinceAssignmentChangedNanos() {
    return ticker.nanoTime() - listener.changedNanos();
  }

  /** Nanoseconds since the consumer thread last went round its loop (a poll, or a failed attempt). */
  long sinceLastTurnNanos() {
    return ticker.nanoTime() - lastTurnNanos;
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
  void restart(PartitionId id, PartitionProgress assignment, String cause, String why) {
    post(() -> assignments.restart(id, assignment, cause, why));
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
    post(() -> assignments.halt(id, assignment, why, cause));
  }

  private void post(Runnable task) {
    inbox.add(task);
    wakeup();
  }

  private void wakeup() {
    Consumer<byte[], byte[]> c = consumer;
    if (c != null) {
      c.wakeup();
    }
  }

  private void run() {
    int failures = 0;
    long lastFailure = 0;
    while (!stopRequested) {
      lastTurnNanos = ticker.nanoTime();
      try {
        if (consumer == null) {
          subscribe();
        }
        runInbox();
        assignments.maybeCommit();
        ConsumerRecords<byte[], byte[]> records = consumer.poll(POLL);
        consumerFailure = null;
        if (failures > 0 && ticker.nanoTime() - lastFailure > 6 * settings.retryBackoff().max().toNanos()) {
          failures = 0;   // healthy for a while: the next failure backs off from the start again
        }
        for (TopicPartition tp : records.partitions()) {
          assignments.offer(tp, records.records(tp));
        }
      } catch (WakeupException e) {
        // another thread posted work (or asked to stop): run it
      } catch (RuntimeException | Error e) {
        if (stopRequested) {
          break;
        }
        Duration wait = restartBackoff.delay(failures++);
        consumerFailure = e.toString();
        lastFailure = ticker.nanoTime();
        log.error("[{}] consumer failed; closing it and starting a new one in {} ms (its partitions are re-assigned "
            + "and seek to their actors' stored offsets): {}", settings.name(), wait.toMillis(), e.toString(), e);
        try {
          // Let go of every partition at once: no heartbeats run while a closing consumer's listener waits.
          assignments.letGoAll();
          closeConsumer();
        } catch (RuntimeException | Error closing) {
          log.warn("[{}] closing the failed consumer: {}", settings.name(), closing.toString());
          consumer = null;
          assignments.use(null);
          listener.left();
        }
        sleep(wait);
      }
    }
    try {
      try {
        assignments.drain();
      } finally {
        assignments.letGoAll();
        closeConsumer();
      }
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

  private void closeConsumer() {
    Consumer<byte[], byte[]> c = consumer;
    if (c == null) {
      return;
    }
    try {
      c.close(Duration.ofSeconds(5));   // revokes (listener) and leaves the group
    } catch (RuntimeException e) {
      log.debug("[{}] closing the consumer: {}", settings.name(), e.toString());
    }
    assignments.letGoAll();
    consumer = null;
    assignments.use(null);
    listener.left();
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
