package io.fencepost.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.BiConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import com.typesafe.config.ConfigFactory;
import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;
import io.fencepost.PartitionId;
import io.fencepost.examples.Credited;
import io.fencepost.examples.HoldOnceLedger;
import io.fencepost.examples.LedgerNode;
import io.fencepost.examples.Payment;
import io.fencepost.examples.PaymentJson;
import io.fencepost.internal.BatchEvent;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.embedded.ClusterNodes;
import io.fencepost.embedded.Directories;
import io.fencepost.embedded.FreePorts;
import io.fencepost.embedded.JvmProcess;
import io.fencepost.embedded.Postgres;
import io.fencepost.embedded.Topics;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * Three ledger nodes as separate JVM processes in one Pekko cluster and one consumer group, with the
 * Kafka broker in a fourth process and the journal on PostgreSQL. Nodes are stopped, SIGKILLed and
 * SIGSTOPped mid-stream; the journal must then hold every offset's credit exactly once.
 */
@Tag("integration")
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class ClusterFailoverIT {

  private static final int PARTITIONS = 12;
  private static final String TOPIC = "payments";
  private static final String GROUP = "ledger";
  /** The ledger nodes announce each credit here through the outbox. */
  private static final String CREDITED = "credited";
  /** Longer than the first fault comes: a killed node's relays have always published past their stored position. */
  private static final String STORE_EVERY = "-Dfencepost.pipeline.outbox.store-position-every=30s";

  private final List<JvmProcess> processes = new ArrayList<>();
  private Path logs;
  private JvmProcess brokerProcess;
  private String bootstrap;
  private JournalDatabase db;
  /** Ascending: node0, the first seed, has the lowest address (keep-majority keeps its side of a tie). */
  private final int[] ports = IntStream.generate(FreePorts::next).limit(3).sorted().toArray();
  private final JvmProcess[] nodes = new JvmProcess[3];

  @BeforeEach
  void start(TestInfo info) throws IOException {
    logs = Path.of("target", "it-logs", info.getTestMethod().orElseThrow().getName());
    Directories.deleteRecursively(logs);   // logs and held-payment claims of an earlier run
    brokerProcess = track(JvmProcess.start("broker", Main.class.getName(),
        List.of("broker", "--topic", TOPIC + ":" + PARTITIONS, "--topic", CREDITED + ":" + PARTITIONS),
        logs.resolve("broker.log")));
    bootstrap = brokerProcess.awaitLine("BOOTSTRAP=", Duration.ofSeconds(90)).substring("BOOTSTRAP=".length());
    db = Postgres.shared().createDatabase("cluster_it");
    db.installSchema();
    for (int i = 0; i < 3; i++) {
      startNode(i);
    }
    for (int i = 0; i < 3; i++) {
      nodes[i].awaitLine("READY", Duration.ofSeconds(90));
    }
    // Faults start from a formed cluster: a node that is not a member yet cannot be downed.
    for (int i = 0; i < 3; i++) {
      nodes[i].awaitLine("UP ", Duration.ofSeconds(90));
    }
  }

  @AfterEach
  void stop() {
    for (JvmProcess p : processes) {
      p.close();
    }
    Postgres.shared().dropDatabase(db);
    // Over every test: no partition seeked unassigned, served twice or restarted by the watchdog.
    OwnershipLog ownership = OwnershipLog.of(List.of(nodes[0].log(), nodes[1].log(), nodes[2].log()));
    System.out.println("ownership: " + ownership.render());
    assertEquals(0, ownership.anomalies(), "ownership anomalies in the nodes' logs");
    assertEquals(0, ownership.partitionRestarts(), "partitions restarted (stalled or lacking records)");
  }

  private JvmProcess track(JvmProcess p) {
    processes.add(p);
    return p;
  }

  private void startNode(int i) {
    List<String> seeds = List.of("127.0.0.1:" + ports[0], "127.0.0.1:" + ports[1], "127.0.0.1:" + ports[2]);
    List<String> args = new ArrayList<>(LedgerNode.commandLine(bootstrap, TOPIC, GROUP, db, ports[i], seeds));
    args.addAll(List.of("--outbox-topic", CREDITED));
    String hold = "-D" + HoldOnceLedger.HOLD_DIR_PROPERTY + "=" + holdDir().toAbsolutePath();
    nodes[i] = track(JvmProcess.start("node" + i, List.of(STORE_EVERY, hold), Main.class.getName(), args,
        logs.resolve("node" + i + ".log")));
  }

  /** Where nodes claim and release held payments (see HoldOnceLedger); emptied with the logs by {@link #start}. */
  private Path holdDir() {
    try {
      return Files.createDirectories(logs.resolve("hold"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Produces {@code count} payments with unique ids at about {@code perSecond}, round-robin over partitions. */
  private Thread producer(int from, int count, int perSecond, AtomicLongArray produced) {
    Thread t = new Thread(() -> {
      Properties p = new Properties();
      p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
      p.put(ProducerConfig.ACKS_CONFIG, "all");
      p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
      p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
      PaymentJson json = new PaymentJson();
      try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(p, new StringSerializer(),
          new ByteArraySerializer())) {
        long start = System.nanoTime();
        for (int i = from; i < from + count; i++) {
          int partition = i % PARTITIONS;
          String merchant = "m" + (i % 53);
          producer.send(new ProducerRecord<>(TOPIC, partition, merchant,
              json.serialize(TOPIC, new Payment("pay-" + i, merchant, 100 + i % 900))), (md, e) -> {
                if (e == null) {
                  produced.incrementAndGet(md.partition());
                }
              });
          long due = start + (long) ((i - from + 1) * 1e9 / perSecond);
          long wait = due - System.nanoTime();
          if (wait > 0) {
            Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
          }
        }
        producer.flush();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "producer");
    t.start();
    return t;
  }

  /** Credits per offset for every partition, read from the journal. */
  private Map<Integer, Map<Long, Integer>> journal() throws Exception {
    Map<Integer, Map<Long, Integer>> out = new TreeMap<>();
    forEachEvent(GROUP, TOPIC, (p, e) -> out.computeIfAbsent(p, k -> new TreeMap<>())
        .merge(((Credited) e).offset(), 1, Integer::sum));
    for (int p = 0; p < PARTITIONS; p++) {
      out.putIfAbsent(p, new TreeMap<>());
    }
    return out;
  }

  /** One line per journal entry of a ledger partition (diagnosis of a failed assertion). */
  private String describeJournal(int partition) throws Exception {
    StringBuilder out = new StringBuilder();
    ActorSystem<Void> reader = ActorSystem.create(Behaviors.empty(), "describer",
        db.pekkoConfig().withFallback(ConfigFactory.load()));
    try {
      PersistenceQuery.get(reader).getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier())
          .currentEventsByPersistenceId(new PartitionId(GROUP, TOPIC, partition).persistenceId(), 0, Long.MAX_VALUE)
          .runForeach(env -> {
            BatchEvent e = (BatchEvent) env.event();
            long minCredit = e.events().stream().mapToLong(x -> ((Credited) x).offset()).min().orElse(-1);
            long maxCredit = e.events().stream().mapToLong(x -> ((Credited) x).offset()).max().orElse(-1);
            out.append(String.format("  #%d %s offsets [%d..%d) applied %d byKey %d credits %d [%d..%d] dead %d%n",
                env.sequenceNr(), e.incarnation().substring(0, 8), e.fromOffset(), e.nextOffset(), e.applied(),
                e.droppedByKey(), e.events().size(), minCredit, maxCredit, e.deadLetters().size()));
          }, reader).toCompletableFuture().get(60, TimeUnit.SECONDS);
    } finally {
      reader.terminate();
      reader.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
    return out.toString();
  }

  /** Every user event journaled by the actors of (group, topic), with its partition. */
  private void forEachEvent(String group, String topic, BiConsumer<Integer, Object> onEvent)
      throws Exception {
    ActorSystem<Void> reader = ActorSystem.create(Behaviors.empty(), "reader",
        db.pekkoConfig().withFallback(ConfigFactory.load()));
    try {
      JdbcReadJournal journal = PersistenceQuery.get(reader)
          .getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier());
      for (int p = 0; p < PARTITIONS; p++) {
        int partition = p;
        journal.currentEventsByPersistenceId(new PartitionId(group, topic, p).persistenceId(), 0, Long.MAX_VALUE)
            .runForeach(env -> ((BatchEvent) env.event()).events().forEach(e -> onEvent.accept(partition, e)), reader)
            .toCompletableFuture().get(60, TimeUnit.SECONDS);
      }
    } finally {
      reader.terminate();
      reader.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  /** Waits until every produced offset is in the journal, then asserts each exactly once. */
  private void assertEveryOffsetExactlyOnce(AtomicLongArray produced, Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    Map<Integer, Map<Long, Integer>> seen = journal();
    while (System.nanoTime() < deadline && !complete(seen, produced)) {
      Thread.sleep(2000);
      seen = journal();
    }
    long total = 0;
    for (int p = 0; p < PARTITIONS; p++) {
      Map<Long, Integer> credits = seen.get(p);
      Map<Long, Integer> doubled = new HashMap<>();
      credits.forEach((offset, n) -> {
        if (n != 1) {
          doubled.put(offset, n);
        }
      });
      assertEquals(Map.of(), doubled, "offsets credited more than once on partition " + p);
      if (produced.get(p) != credits.size()) {
        System.out.println("partition " + p + ": " + credits.size() + " offsets credited of " + produced.get(p)
            + "; its journal entries:\n" + describeJournal(p));
      }
      assertEquals(produced.get(p), credits.size(), "offsets credited on partition " + p);
      for (long o = 0; o < produced.get(p); o++) {
        assertTrue(credits.containsKey(o), "offset " + o + " of partition " + p + " never credited");
      }
      total += credits.size();
    }
    System.out.println("journal holds " + total + " credits, each offset exactly once");
  }

  private static boolean complete(Map<Integer, Map<Long, Integer>> seen, AtomicLongArray produced) {
    for (int p = 0; p < PARTITIONS; p++) {
      if (seen.get(p).size() < produced.get(p)) {
        return false;
      }
    }
    return true;
  }

  @Test
  void nodesStoppedAndKilledMidStreamLoseNothingAndDoubleNothing() throws Exception {
    AtomicLongArray produced = new AtomicLongArray(PARTITIONS);
    Thread producer = producer(0, 36_000, 1_200, produced);   // ~30 s of traffic
    Thread.sleep(4_000);
    long killedAt = System.nanoTime();
    LocalTime killedClock = LocalTime.now();
    nodes[2].kill();                                           // SIGKILL mid-stream
    // A 3-node cluster survives one failure at a time: let the split-brain resolver down the dead
    // node and its partitions move before the next fault.
    Thread.sleep(12_000);
    startNode(2);
    nodes[2].awaitLine("READY", Duration.ofSeconds(90));
    Thread.sleep(3_000);
    nodes[1].terminate(Duration.ofSeconds(60));               // graceful stop mid-stream
    startNode(1);
    nodes[1].awaitLine("READY", Duration.ofSeconds(90));
    producer.join();
    assertEveryOffsetExactlyOnce(produced, Duration.ofMinutes(4));
    System.out.printf("all caught up %.1f s after the SIGKILL; partitions of the killed node resumed on a "
        + "survivor %s after it; fenced writes seen: %d%n", (System.nanoTime() - killedAt) / 1e9,
        firstSeekAfter(killedClock), fencedWrites());
    for (int i = 0; i < 3; i++) {
      assertTrue(nodes[i].isAlive(), "node" + i + " still runs");
    }
  }

  /** When a surviving node first seeked a (moved) partition after the kill, from the nodes' logs. */
  private String firstSeekAfter(LocalTime killed) {
    return OwnershipLog.firstSeekAfter(killed, List.of(nodes[0].log(), nodes[1].log()))
        .map(d -> String.format("%.1f s", d.toMillis() / 1e3)).orElse("?");
  }

  private long fencedWrites() {
    long n = 0;
    for (JvmProcess node : nodes) {
      n += node.lines().stream().filter(OwnershipLog::isFencedWrite).count();
    }
    return n;
  }

  @Test
  void aZombieNodeResumedAfterItsSessionExpiredCannotDoubleAnEffect() throws Exception {
    AtomicLongArray produced = new AtomicLongArray(PARTITIONS);
    Thread producer = producer(0, 30_000, 2_000, produced);
    Thread.sleep(4_000);
    nodes[2].pause();                                          // SIGSTOP, mid-batch
    Thread.sleep(15_000);                                      // > session.timeout.ms (6 s) and SBR's decision
    nodes[2].resume();                                         // SIGCONT: it wakes up believing it owns partitions
    producer.join();
    assertEveryOffsetExactlyOnce(produced, Duration.ofMinutes(4));
    System.out.println("zombie: fenced writes seen " + fencedWrites() + ", zombie told it was downed: "
        + nodes[2].countLines("has been downed"));
  }

  /**
   * Sequential faults: a zombie the others down, then a SIGKILL of the oldest node. The zombie does
   * not exit: only its cluster membership stops, and a new one joins while it goes on consuming. The
   * ledger goes on all the same: its partitions follow Kafka, not the cluster's membership.
   */
  @Test
  void aZombieThenAKillOfTheOldestNodeDoNotStopTheLedger() throws Exception {
    AtomicLongArray produced = new AtomicLongArray(PARTITIONS);
    Thread producer = producer(0, 48_000, 1_200, produced);   // ~40 s of traffic
    Thread.sleep(4_000);
    nodes[2].pause();                                          // SIGSTOP 20 s: a zombie
    Thread.sleep(20_000);
    nodes[2].resume();
    awaitLog(nodes[2], "cluster membership 1 of " + address(2) + " ended: downed by the cluster",
        Duration.ofSeconds(60));
    nodes[2].awaitLine("UP " + address(2) + " (membership 2)", Duration.ofSeconds(90));   // rejoined, in-process
    nodes[0].kill();                                           // the oldest node
    producer.join();
    assertEveryOffsetExactlyOnce(produced, Duration.ofMinutes(4));
    assertTrue(nodes[1].isAlive() && nodes[2].isAlive(), "no survivor exited");
    System.out.println("zombie then kill of the oldest: node1 memberships " + nodes[1].countLines("UP ")
        + ", node2 memberships " + nodes[2].countLines("UP ") + "; fenced writes seen " + fencedWrites());
  }

  /**
   * A two-node cluster (the third node killed and downed first), and the first seed SIGKILLed:
   * keep-majority downs the survivor (one against one, and the first seed has the lowest address).
   * Consuming needs no cluster: the survivor keeps applying every partition, with no exit and no
   * restart, while its membership starts again; once the first seed is back, it rejoins.
   */
  @Test
  void theSurvivorOfATwoNodeClusterWhoseFirstSeedWasKilledKeepsApplying() throws Exception {
    nodes[2].kill();                                           // the others down it: two members remain
    String downed = "and is downing [" + address(2) + "]";
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (nodes[0].countLines(downed) + nodes[1].countLines(downed) == 0) {
      assertTrue(System.nanoTime() < deadline, "node2 was not downed within 60 s");
      Thread.sleep(200);
    }
    AtomicLongArray produced = new AtomicLongArray(PARTITIONS);
    Thread producer = producer(0, 30_000, 1_000, produced);   // ~30 s of traffic
    Thread.sleep(4_000);
    nodes[0].kill();                                           // the first seed
    awaitLog(nodes[1], "cluster membership 1 of " + address(1) + " ended: downed by the cluster",
        Duration.ofSeconds(60));
    long downedAt = System.nanoTime();
    producer.join();
    assertEveryOffsetExactlyOnce(produced, Duration.ofMinutes(4));
    System.out.printf("survivor applied every payment %.1f s after it was downed%n",
        (System.nanoTime() - downedAt) / 1e9);
    assertTrue(nodes[1].isAlive(), "the downed survivor still runs");
    assertEquals(1, nodes[1].countLines("READY"), "the survivor was not restarted");
    assertEquals(1, nodes[1].countLines("UP "), "no cluster to join while the first seed is down");
    startNode(0);                                              // the first seed again: a cluster to rejoin
    nodes[1].awaitLine("UP " + address(1) + " (membership 2)", Duration.ofSeconds(120));
    assertEquals(2, nodes[1].countLines("UP " + address(1) + " (membership "), "the survivor rejoined, once");
  }

  private String address(int node) {
    return "pekko://" + LedgerNode.SYSTEM_NAME + "@127.0.0.1:" + ports[node];
  }

  /** Waits until {@code node}'s log holds a line containing {@code text}. */
  private static void awaitLog(JvmProcess node, String text, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (node.countLines(text) == 0) {
      assertTrue(System.nanoTime() < deadline, node + " did not log [" + text + "] within " + timeout);
      Thread.sleep(200);
    }
  }

  /**
   * The fencing rule across processes, made deterministic: a node is frozen (SIGSTOP) while a batch
   * sits inside its partition actor between the handler and the journal write; the partition moves,
   * the new owner applies the same records and writes; the frozen node resumes and its write must be
   * rejected by the journal's primary key, not by timing.
   */
  @Test
  void aStaleOwnerFrozenBetweenItsHandlerAndItsJournalWriteIsRejectedByTheJournal() throws Exception {
    AtomicLongArray produced = new AtomicLongArray(PARTITIONS);
    producer(0, 2_400, 1_200, produced).join();
    // Every node idle, so that the held batch is the only write in flight when its node freezes.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (!complete(journal(), produced)) {
      assertTrue(System.nanoTime() < deadline, "the first payments were not applied within 120 s");
      Thread.sleep(500);
    }
    long heldOffset = send(0, new Payment("hold-1", "m-held", 4_200), produced);
    int holder = -1;
    deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (holder < 0) {
      assertTrue(System.nanoTime() < deadline, "no node held payment hold-1 within 90 s");
      for (int i = 0; i < 3; i++) {
        if (nodes[i].countLines("HOLDING hold-1 at offset " + heldOffset + " ") == 1) {
          holder = i;
        }
      }
      Thread.sleep(50);
    }
    JvmProcess stale = nodes[holder];
    stale.pause();                                             // SIGSTOP between handler and journal write
    // Its partitions move: the new owner recovers the stored offset (below the held record), applies
    // the held payment (the claim exists, so it does not hold) and journals it.
    deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (!journal().get(0).containsKey(heldOffset)) {
      assertTrue(System.nanoTime() < deadline, "the held payment was not applied elsewhere within 120 s");
      Thread.sleep(500);
    }
    // Resumed only once the others downed it (a partition moves sooner than the resolver decides):
    // then the resumed node learns it is out of the cluster; only its membership stops.
    String downed = "and is downing [pekko://" + LedgerNode.SYSTEM_NAME + "@127.0.0.1:" + ports[holder] + "]";
    deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (nodes[(holder + 1) % 3].countLines(downed) + nodes[(holder + 2) % 3].countLines(downed) == 0) {
      assertTrue(System.nanoTime() < deadline, "the others did not down the frozen node within 60 s");
      Thread.sleep(200);
    }
    Files.createFile(holdDir().resolve("release-hold-1"));
    stale.resume();                                            // SIGCONT: its handler returns, it writes
    awaitLog(stale, "fenced: the journal refused this incarnation's write", Duration.ofSeconds(90));
    awaitLog(stale, "cluster membership 1 of " + address(holder) + " ended: downed by the cluster",
        Duration.ofSeconds(60));
    assertTrue(stale.isAlive(), "the downed node goes on (its membership starts again)");
    stale.terminate(Duration.ofSeconds(60));                   // its counter is printed at exit
    int status = stale.awaitExit(Duration.ZERO);
    System.out.println("stale owner node" + holder + ": "
        + stale.lines().stream().filter(OwnershipLog::isFencedWrite).count() + " fenced write(s), exit status " + status);
    assertEquals(1, stale.countLines("RELEASED hold-1"), "the frozen handler returned after SIGCONT");
    assertEquals(1, stale.countLines("[" + GROUP + "|" + TOPIC + "|0] fenced: the journal refused this incarnation's "
        + "write of offsets [" + heldOffset + ".." + heldOffset + "] on its unique key"), "its journal write was refused");
    assertEquals(1, stale.lines().stream().filter(OwnershipLog::isFencedWrite).count(), "no other write of it fenced");
    assertEquals(1, stale.countLines("fencepost.writes.fenced on this node: 1"), "its fenced-write counter");
    assertEquals(143, status, "stopped by SIGTERM");
    assertEveryOffsetExactlyOnce(produced, Duration.ofMinutes(4));
  }

  /** The partitions whose stream {@code node} started (log lines {@code seeking to stored offsets {payments-N=...}}). */
  private static Set<Integer> partitionsStartedOn(JvmProcess node) {
    Set<Integer> out = new TreeSet<>();
    Pattern seek = Pattern.compile("seeking to stored offsets \\{" + TOPIC + "-(\\d+)=");
    for (String line : node.lines()) {
      Matcher m = seek.matcher(line);
      if (m.find()) {
        out.add(Integer.parseInt(m.group(1)));
      }
    }
    return out;
  }

  /** Sends one payment to {@code partition} and returns its offset (counted in {@code produced}). */
  private long send(int partition, Payment payment, AtomicLongArray produced) throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(p, new StringSerializer(),
        new ByteArraySerializer())) {
      long offset = producer.send(new ProducerRecord<>(TOPIC, partition, payment.merchantId(),
          new PaymentJson().serialize(TOPIC, payment))).get(30, TimeUnit.SECONDS).offset();
      produced.incrementAndGet(partition);
      return offset;
    }
  }

  /** Pipeline B: counts the ledger's announcements, deduplicating by the default business key. */
  // snippet: outbox-downstream
  static final class CreditCounter extends PartitionActor<Payment, Long, String> {
    CreditCounter(PartitionContext context) {
      super(context);
    }

    @Override
    protected Long emptyState() {
      return 0L;
    }

    @Override
    protected Effects<String> onRecord(Long count, Inbound<Payment> in) {
      return Effects.persist(in.value().paymentId());
    }

    @Override
    protected Long applyEvent(Long count, String paymentId) {
      return count + 1;
    }
    // businessKey() not overridden: the outbox relay's fencepost.outbox-id header is the key
  }
  // end-snippet: outbox-downstream

  @Test
  void outboxRecordsOfAKilledNodeArePublishedAgainAndDroppedDownstreamByTheirId() throws Exception {
    int port = FreePorts.next();
    ActorSystem<Void> downstream = ActorSystem.create(Behaviors.empty(), "downstream",
        ClusterNodes.node("downstream", port, List.of())
            .withFallback(db.pekkoConfig()).withFallback(ConfigFactory.load()));
    try {
      ClusterNodes.joinSelf(downstream, Duration.ofSeconds(30));
      Pipeline b = KafkaPipeline.create(downstream, CreditCounter::new, new PaymentJson(),
          PipelineSettings.create(downstream, "mirror").withBootstrapServers(bootstrap)
              .withTopics(List.of(CREDITED)).withGroupId("mirror")).start();
      AtomicLongArray produced = new AtomicLongArray(PARTITIONS);
      Thread producer = producer(0, 24_000, 1_200, produced);   // ~20 s of traffic
      // Kill node2 while its relays publish: once one has published, before its first position store
      // 30 s after it started.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (nodes[2].countLines("outbox relay published its first") == 0) {
        assertTrue(System.nanoTime() < deadline, "node2's outbox relays published nothing within 60 s");
        Thread.sleep(100);
      }
      Thread.sleep(1_000);
      Set<Integer> relayed = partitionsStartedOn(nodes[2]);
      nodes[2].kill();                                           // SIGKILL while its relays publish
      producer.join();
      assertEveryOffsetExactlyOnce(produced, Duration.ofMinutes(4));
      // The survivors' relays of the killed node's partitions re-publish from the stored positions:
      // wait until each has published, or B may look complete before they started.
      deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
      for (int p : relayed) {
        while (nodes[0].countLines("[" + TOPIC + "-" + p + "] outbox relay published its first") == 0
            && nodes[1].countLines("[" + TOPIC + "-" + p + "] outbox relay published its first") == 0) {
          assertTrue(System.nanoTime() < deadline, "no survivor relayed partition " + p + " within 3 min");
          Thread.sleep(200);
        }
      }
      long payments = 0;
      for (int p = 0; p < PARTITIONS; p++) {
        payments += produced.get(p);
      }
      long published = awaitConsumed(b, payments, Duration.ofMinutes(3));
      long applied = 0;
      long droppedByKey = 0;
      for (PartitionView v : b.status().toCompletableFuture().get(30, TimeUnit.SECONDS)) {
        applied += v.appliedRecords();
        droppedByKey += v.droppedByKey();
      }
      Map<String, Integer> perPayment = new HashMap<>();
      forEachEvent("mirror", CREDITED, (p, e) -> perPayment.merge((String) e, 1, Integer::sum));
      long republished = published - payments;
      System.out.printf("outbox: %d payments, %d records in [%s] (%d published again after the kill), B applied %d "
          + "and dropped %d by outbox id%n", payments, published, CREDITED, republished, applied, droppedByKey);
      assertEquals(payments, perPayment.size(), "distinct payments B applied");
      assertEquals(Map.of(), perPayment.entrySet().stream().filter(en -> en.getValue() != 1)
          .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue)), "payments B doubled");
      assertEquals(payments, applied);
      assertTrue(republished > 0, "the killed node's relays had published past their stored position");
      assertEquals(republished, droppedByKey, "every re-published copy dropped by B by its outbox id");
    } finally {
      downstream.terminate();
      downstream.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  /** Waits until B's stored offsets reach the end of every partition of the outbox topic, stable for 5 s. */
  /**
   * Waits until B consumed the whole outbox topic, it held still for 5 s and B applied at least
   * {@code payments} records (a partition taken over late re-publishes for a while: an end offset
   * that holds still is not enough). Returns the topic's record count.
   */
  private long awaitConsumed(Pipeline b, long payments, Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    long lastEnd = -1;
    long stableSince = System.nanoTime();
    long applied = 0;
    while (System.nanoTime() < deadline) {
      long end = Topics.recordCount(bootstrap, CREDITED);
      long stored = 0;
      applied = 0;
      for (PartitionView v : b.status().toCompletableFuture().get(30, TimeUnit.SECONDS)) {
        stored += v.nextOffset().orElse(0);
        applied += v.appliedRecords();
      }
      if (end != lastEnd) {
        lastEnd = end;
        stableSince = System.nanoTime();
      }
      if (stored == end && applied >= payments && System.nanoTime() - stableSince > TimeUnit.SECONDS.toNanos(5)) {
        return end;
      }
      Thread.sleep(1000);
    }
    throw new AssertionError("B did not consume the outbox topic within " + timeout + " (end " + lastEnd
        + ", applied " + applied + " of " + payments + ")");
  }
}
