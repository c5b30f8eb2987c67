package io.fencepost.benchmarks;

import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.IntStream;

import io.fencepost.examples.LedgerNode;
import io.fencepost.tools.Main;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Directories;
import io.fencepost.embedded.FreePorts;
import io.fencepost.embedded.JvmProcess;
import io.fencepost.embedded.Postgres;

/**
 * Partition fail-over of a 3-node ledger cluster: the examples' {@code fencepost ledger} nodes as
 * separate JVMs, the broker in a fourth, the journal on an embedded PostgreSQL, and a steady
 * {@value #RATE} payments/s on {@value #PARTITIONS} partitions for the whole run. Each run SIGKILLs
 * one node, then SIGTERMs another, and restarts each 30 s after its fault; it measures, from the
 * journal's write times (see {@link JournalTimeline}):
 *
 * <ul>
 *   <li>fail-over: per partition the stopped node owned, the time from the signal to the partition's
 *       first journal write by another actor incarnation (it applies again elsewhere);
 *   <li>the other partitions' longest gap between journal writes from 1 s before the fault to 30 s
 *       after it (cooperative rebalancing should leave them flowing);
 *   <li>the same longest gap around the restarted node's join, for the partitions it did not take.
 * </ul>
 *
 * <p>Run: {@code SideBySide failover <results-dir> [runs]} (see benchmarks/results/README.md).
 */
final class Failover {

  static final int DEFAULT_RUNS = 5;

  /** How a node is stopped. */
  enum Kind { SIGKILL, SIGTERM }

  /** The longest time without a journal write among some partitions, and which one (-1: no partition). */
  record Gap(long ms, int partition) {
    static final Gap NONE = new Gap(0, -1);

    Gap max(Gap other) {
      return other.ms > ms ? other : this;
    }
  }

  /**
   * One fault.
   *
   * @param failoverMs per partition the node owned at the fault, milliseconds from the signal to its
   *     first write elsewhere; null when it did not write within {@link #FAILOVER_LIMIT}
   * @param others the longest gap of the other partitions in the window around the fault
   * @param othersMoved other partitions that another incarnation wrote in that window
   */
  record FaultRun(int run, Kind kind, int node, long at, Map<Integer, Long> failoverMs, Gap others,
      List<Integer> othersMoved) {
  }

  /** The restart of a stopped node: its partitions, their longest pause, and the others' longest gap. */
  record JoinRun(int run, Kind after, int node, long startedAt, long readyAt, List<Integer> moved, Gap movedPause,
      Gap others) {
  }

  static final String TOPIC = "payments";
  static final String GROUP = "ledger";
  static final int PARTITIONS = 12;
  static final int NODES = 3;
  static final int RATE = 5_000;
  static final Duration BEFORE = Duration.ofSeconds(1);
  static final Duration WINDOW = Duration.ofSeconds(30);
  /** Steady: every partition wrote within this long (at 5,000/s each writes every few tens of ms). */
  static final Duration STEADY = Duration.ofSeconds(2);
  static final Duration WARM_UP = Duration.ofSeconds(30);
  static final Duration FAILOVER_LIMIT = Duration.ofSeconds(120);
  private static final Duration STEADY_LIMIT = Duration.ofMinutes(3);
  private static final Duration START_LIMIT = Duration.ofSeconds(120);
  private static final Duration STOP_LIMIT = Duration.ofSeconds(60);
  /** Longer than a journal insert takes to commit, so that a window's rows are all visible. */
  private static final long SETTLE_MS = 2_000;
  private static final long POLL_MS = 500;
  /** The charts start this many seconds before their fault. */
  private static final int CHART_BEFORE_S = 5;

  private final Path results;
  private final int runs;
  private final PrintStream out;
  /** Node and broker logs (kept), the broker's log dirs and PostgreSQL's data (deleted at the end). */
  private final Path dir = Path.of("target", "failover").toAbsolutePath();
  private final List<JvmProcess> started = new ArrayList<>();
  private final int[] ports = new int[NODES];
  private final JvmProcess[] nodes = new JvmProcess[NODES];
  private String bootstrap;
  private JournalDatabase db;
  private JournalTimeline timeline;

  private Failover(Path results, int runs, PrintStream out) {
    this.results = results;
    this.runs = runs;
    this.out = out;
  }

  /** Runs the benchmark and writes failover.md and its charts; false if a partition never applied again. */
  static boolean run(Path results, int runs, PrintStream out) throws Exception {
    if (runs < 1) {
      throw new IllegalArgumentException("runs must be >= 1, was " + runs);
    }
    return new Failover(results, runs, out).run();
  }

  private boolean run() throws Exception {
    long begin = System.nanoTime();
    Directories.deleteRecursively(dir);
    Postgres postgres = null;
    SteadyPayments payments = null;
    try {
      // The broker creates the topic and waits for its leaders before it prints BOOTSTRAP=.
      JvmProcess broker = track(JvmProcess.start("broker", Main.class.getName(), List.of("broker", "--dir",
          dir.resolve("kafka").toString(), "--port", Integer.toString(FreePorts.next()), "--topic",
          TOPIC + ":" + PARTITIONS), dir.resolve("broker.log")));
      bootstrap = broker.awaitLine("BOOTSTRAP=", START_LIMIT).substring("BOOTSTRAP=".length());
      postgres = Postgres.startEmbedded(dir.resolve("postgres"), FreePorts.next());
      db = postgres.createDatabase("failover");
      db.installSchema();
      timeline = new JournalTimeline(db, GROUP, TOPIC, PARTITIONS);
      for (int i = 0; i < NODES; i++) {
        ports[i] = FreePorts.next();
      }
      for (int i = 0; i < NODES; i++) {
        startNode(i);
      }
      for (JvmProcess n : nodes) {
        n.awaitLine("READY", START_LIMIT);
      }
      out.printf(Locale.ROOT, "broker %s, %d ledger nodes, journal %s; node logs in %s%n", bootstrap, NODES,
          db.jdbcUrl(), dir);
      payments = new SteadyPayments(bootstrap, TOPIC, RATE);
      payments.start();
      out.printf(Locale.ROOT, "producing %,d payments/s; warming up for %d s%n", RATE, WARM_UP.toSeconds());
      Thread.sleep(WARM_UP.toMillis());
      List<FaultRun> faults = new ArrayList<>();
      List<JoinRun> joins = new ArrayList<>();
      for (int r = 1; r <= runs; r++) {
        for (Kind kind : Kind.values()) {
          // Rotates the stopped node over nodes 1 and 2: kill 1, stop 2, kill 2, stop 1, ... Node 0 is
          // the first seed: restarted alone it may form a cluster of its own (seen: an island whose
          // writes the journal fenced), which is a deployment question, not a fail-over figure.
          int node = 1 + (r - 1 + kind.ordinal()) % (NODES - 1);
          awaitSteady(payments);
          faults.add(fault(r, kind, node));
          joins.add(join(r, kind, node));
        }
      }
      payments.check();
      timeline.refresh();
      timeline.readLogs(logs());
      write(faults, joins, payments.sent());
      out.printf(Locale.ROOT, "failover run took %.1f minutes; results in %s%n", (System.nanoTime() - begin) / 60e9,
          results.toAbsolutePath());
      return faults.stream().allMatch(f -> !f.failoverMs().containsValue(null));
    } finally {
      if (payments != null) {
        payments.stop();
      }
      List<JvmProcess> byAge = new ArrayList<>(started);
      Collections.reverse(byAge);   // the nodes before the broker
      byAge.forEach(JvmProcess::close);
      if (timeline != null) {
        timeline.close();
      }
      if (postgres != null) {
        postgres.close();
      }
      deleteQuietly(dir.resolve("postgres"));
      deleteQuietly(dir.resolve("kafka"));
    }
  }

  /** Stops one node, measures its partitions' fail-over and the others' longest gap. */
  private FaultRun fault(int run, Kind kind, int node) throws Exception {
    long at = System.currentTimeMillis();
    if (kind == Kind.SIGKILL) {
      nodes[node].kill();
    } else {
      nodes[node].terminate(STOP_LIMIT);
    }
    out.printf(Locale.ROOT, "run %d: %s node%d at %s; it exited after %.1f s (%s)%n", run, kind, node, clock(at),
        (System.currentTimeMillis() - at) / 1e3, exitStatus(nodes[node]));
    timeline.refresh();
    timeline.readLogs(logs());   // the stopped node's log is complete now
    Map<Integer, String> lastWriter = new TreeMap<>();
    for (int p = 0; p < PARTITIONS; p++) {
      if (timeline.ownerAt(p, at) == node) {
        lastWriter.put(p, timeline.lastAtOrBefore(p, at).map(JournalTimeline.Write::writer).orElse(""));
      }
    }
    out.printf(Locale.ROOT, "  node%d owned %s%n", node, names(lastWriter.keySet()));
    Map<Integer, Long> failover = new TreeMap<>();
    long deadline = at + FAILOVER_LIMIT.toMillis();
    while (failover.size() < lastWriter.size() && System.currentTimeMillis() < deadline) {
      Thread.sleep(POLL_MS);
      timeline.refresh();
      timeline.readLogs(logs());
      for (Map.Entry<Integer, String> e : lastWriter.entrySet()) {
        int p = e.getKey();
        // Another incarnation's write: a SIGTERMed node's own last writes while it drains do not count.
        Optional<JournalTimeline.Write> first = failover.containsKey(p) ? Optional.empty()
            : timeline.firstAfter(p, at, w -> !w.writer().equals(e.getValue()));
        if (first.isPresent()) {
          failover.put(p, first.get().at() - at);
          out.printf(Locale.ROOT, "  %s-%d applying again on node%d %.2f s after the %s%n", TOPIC, p,
              timeline.ownerAt(p, first.get().at()), (first.get().at() - at) / 1e3, kind);
        }
      }
    }
    for (int p : lastWriter.keySet()) {
      if (!failover.containsKey(p)) {
        failover.put(p, null);
        out.printf(Locale.ROOT, "  %s-%d NOT applying again within %d s%n", TOPIC, p, FAILOVER_LIMIT.toSeconds());
      }
    }
    sleepUntil(at + WINDOW.toMillis() + SETTLE_MS);
    timeline.refresh();
    Gap others = Gap.NONE;
    List<Integer> othersMoved = new ArrayList<>();
    long from = at - BEFORE.toMillis();
    long to = at + WINDOW.toMillis();
    for (int p = 0; p < PARTITIONS; p++) {
      if (!lastWriter.containsKey(p)) {
        others = others.max(new Gap(timeline.longestGap(p, from, to), p));
        if (timeline.writersBetween(p, from, to) > 1) {
          othersMoved.add(p);
        }
      }
    }
    out.printf(Locale.ROOT, "  others' longest gap %s; others moved: %s%n", gap(others), names(othersMoved));
    return new FaultRun(run, kind, node, at, failover, others, othersMoved);
  }

  /** Restarts a stopped node and measures the others' longest gap while it joins. */
  private JoinRun join(int run, Kind after, int node) throws Exception {
    long startedAt = System.currentTimeMillis();
    startNode(node);
    nodes[node].awaitLine("READY", START_LIMIT);
    long readyAt = System.currentTimeMillis();
    out.printf(Locale.ROOT, "run %d: node%d restarted at %s, READY %.1f s later%n", run, node, clock(startedAt),
        (readyAt - startedAt) / 1e3);
    // From before the JVM starts (cluster join) to 30 s after READY (its consumer joins the group then).
    long from = startedAt - BEFORE.toMillis();
    long to = readyAt + WINDOW.toMillis();
    sleepUntil(to + SETTLE_MS);
    timeline.refresh();
    timeline.readLogs(logs());
    List<Integer> moved = timeline.startedBy(node, startedAt, to);
    Gap movedPause = Gap.NONE;
    Gap others = Gap.NONE;
    for (int p = 0; p < PARTITIONS; p++) {
      Gap g = new Gap(timeline.longestGap(p, from, to), p);
      if (moved.contains(p)) {
        movedPause = movedPause.max(g);
      } else {
        others = others.max(g);
      }
    }
    out.printf(Locale.ROOT, "  node%d took %s (longest pause %s); others' longest gap %s%n", node, names(moved),
        gap(movedPause), gap(others));
    return new JoinRun(run, after, node, startedAt, readyAt, moved, movedPause, others);
  }

  /** Waits until every node runs and every partition wrote in the last {@link #STEADY}. */
  private void awaitSteady(SteadyPayments payments) throws Exception {
    long deadline = System.currentTimeMillis() + STEADY_LIMIT.toMillis();
    while (true) {
      payments.check();
      for (int i = 0; i < NODES; i++) {
        if (!nodes[i].isAlive()) {
          throw new IllegalStateException("node" + i + " exited (" + exitStatus(nodes[i]) + "); see "
              + nodes[i].log().toAbsolutePath());
        }
      }
      timeline.refresh();
      long now = System.currentTimeMillis();
      long quiet = timeline.quietest(now);
      if (quiet <= STEADY.toMillis()) {
        timeline.readLogs(logs());
        List<String> owned = new ArrayList<>();
        for (int i = 0; i < NODES; i++) {
          int node = i;
          owned.add("node" + i + " " + IntStream.range(0, PARTITIONS).filter(p -> timeline.ownerAt(p, now) == node)
              .count());
        }
        out.printf(Locale.ROOT, "steady: every partition wrote in the last %d s; partitions owned: %s%n",
            STEADY.toSeconds(), String.join(", ", owned));
        return;
      }
      if (now > deadline) {
        throw new IllegalStateException("not steady within " + STEADY_LIMIT + ": a partition has not written for "
            + (quiet == Long.MAX_VALUE ? "ever" : quiet + " ms") + "; see the node logs in " + dir);
      }
      Thread.sleep(POLL_MS);
    }
  }

  private void write(List<FaultRun> faults, List<JoinRun> joins, long payments) throws Exception {
    List<FailoverReport.Chart> charts = new ArrayList<>();
    for (Kind kind : Kind.values()) {
      FaultRun f = faults.get(kind.ordinal());   // the first run's fault of this kind, and its join
      JoinRun j = joins.get(kind.ordinal());
      charts.add(new FailoverReport.Chart(kind == Kind.SIGKILL ? "failover.svg" : "failover-sigterm.svg", f, j,
          CHART_BEFORE_S, timeline.writesPerSecond(f.at() - CHART_BEFORE_S * 1000L, j.readyAt() + WINDOW.toMillis(),
          NODES)));
    }
    String md = FailoverReport.markdown(FailoverReport.setup("SideBySide failover " + results + " " + runs, db, runs,
        payments), faults, joins, charts);
    Files.createDirectories(results);
    Files.writeString(results.resolve("failover.md"), md);
    for (FailoverReport.Chart c : charts) {
      Files.writeString(results.resolve(c.file()), FailoverReport.chart(c, NODES));
    }
    out.println(md);
  }

  private void startNode(int i) {
    // Every node lists all three as the cluster's contact points, as ChaosCampaign does.
    List<String> contacts = IntStream.of(ports).mapToObj(p -> "127.0.0.1:" + p).toList();
    nodes[i] = track(JvmProcess.start("node" + i, Main.class.getName(),
        LedgerNode.commandLine(bootstrap, TOPIC, GROUP, db, ports[i], contacts), logs().get(i)));
  }

  private List<Path> logs() {
    return IntStream.range(0, NODES).mapToObj(i -> dir.resolve("node" + i + ".log")).toList();
  }

  private JvmProcess track(JvmProcess p) {
    started.add(p);
    return p;
  }

  private static String exitStatus(JvmProcess p) {
    return p.isAlive() ? "still running" : "exit status " + p.awaitExit(Duration.ZERO);
  }

  private static void sleepUntil(long epochMillis) throws InterruptedException {
    long wait = epochMillis - System.currentTimeMillis();
    if (wait > 0) {
      Thread.sleep(wait);
    }
  }

  private static void deleteQuietly(Path path) {
    try {
      Directories.deleteRecursively(path);
    } catch (UncheckedIOException e) {
      System.err.println("could not delete " + path + ": " + e.getMessage());
    }
  }

  static String clock(long epochMillis) {
    return String.format(Locale.ROOT, "%tT.%<tL", epochMillis);
  }

  static String names(Iterable<Integer> partitions) {
    List<String> names = new ArrayList<>();
    partitions.forEach(p -> names.add(TOPIC + "-" + p));
    return names.isEmpty() ? "none" : String.join(", ", names);
  }

  static String gap(Gap g) {
    return g.partition() < 0 ? "—" : String.format(Locale.ROOT, "%.2f s (%s-%d)", g.ms() / 1e3, TOPIC, g.partition());
  }
}
