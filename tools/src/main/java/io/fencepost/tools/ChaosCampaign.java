package io.fencepost.tools;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import io.fencepost.examples.LedgerNode;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Directories;
import io.fencepost.embedded.FreePorts;
import io.fencepost.embedded.JvmProcess;
import io.fencepost.embedded.Postgres;
import io.fencepost.reconciliation.ReconciliationReport;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;

/**
 * A seeded fault campaign: the broker and N ledger nodes as separate processes on loopback, the
 * journal on a PostgreSQL this process can stop, the payments generator, and a schedule of faults
 * (SIGKILL a node, SIGSTOP/SIGCONT a node past its session timeout, a rebalance by adding and removing
 * a node, a broker restart, a PostgreSQL stop), one at a time. At the end it waits for the ledger to
 * catch up and reconciles the topic against the journal. The same seed replays the same campaign.
 */
final class ChaosCampaign {

  /** The kinds of fault. */
  public enum Fault { KILL, ZOMBIE, REBALANCE, BROKER_RESTART, POSTGRES_STOP }

  /** What to run. */
  public record Plan(long seed, int nodes, int partitions, int payments, int rate, double dupRate, int kills,
      int zombies, int rebalances, int brokerRestarts, int postgresStops, int databases, Path dir,
      Optional<String> outboxDelivery) {
  }

  /** The outcome: the generator's own counts, the faults injected, and the reconciliation. */
  public record Outcome(long payments, long producerDuplicates, List<String> faults, ReconciliationReport report,
      OwnershipLog ownership, List<String> failovers) {

    /** One line: the verdict and whether the report agrees exactly with the generator. */
    public String verdict() {
      boolean exact = exact();
      return (passed() ? "CAMPAIGN PASSED: " : "CAMPAIGN FAILED: ") + report.verdict()
          + (exact ? "" : "; generator sent " + payments + " payments and " + producerDuplicates + " duplicates")
          + "; " + ownership.render() + "; fail-overs after SIGKILL: " + failovers;
    }

    /** With an outbox: a journaled announcement per payment (the report checks the topic against them). */
    private boolean outboxExact() {
      return report.outbox().map(o -> o.expected() == payments).orElse(true);
    }

    private boolean exact() {
      return report.total().expected() == payments && report.total().applied() == payments
          && report.total().producerDuplicates() == producerDuplicates;
    }

    /** Every payment applied once, and no rule of partition ownership broken. */
    public boolean passed() {
      return report.ok() && exact() && ownership.clean() && outboxExact();
    }
  }

  private static final String TOPIC = "payments";
  private static final String GROUP = "ledger";
  /** With an outbox, the topic the nodes announce each credit on. */
  static final String OUTBOX = "credited";

  private final Plan plan;
  private final PrintStream out;
  private final List<JvmProcess> started = new ArrayList<>();
  private final List<String> faultLog = Collections.synchronizedList(new ArrayList<>());
  /** Each SIGKILL: the node and the (log) clock time. */
  private final List<Map.Entry<String, LocalTime>> kills = new ArrayList<>();
  private int keptDown = -1;
  private JvmProcess broker;
  private String bootstrap;
  private int brokerPort;
  /** One PostgreSQL server per journal database. */
  private final List<Postgres> servers = new ArrayList<>();
  private final List<JournalDatabase> dbs = new ArrayList<>();
  private int[] ports;
  private JvmProcess[] nodes;

  public ChaosCampaign(Plan plan, PrintStream out) {
    this.plan = plan;
    this.out = out;
  }

  /** Runs the whole campaign; always cleans up its processes. */
  public Outcome run() throws Exception {
    Directories.deleteRecursively(plan.dir());
    try {
      start();
      List<Fault> schedule = schedule();
      out.println("campaign seed " + plan.seed() + ": " + schedule);
      PaymentProducer producer = new PaymentProducer(bootstrap, TOPIC, 200, plan.dupRate(), plan.seed());
      AtomicReference<PaymentProducer.Summary> summary = new AtomicReference<>();
      AtomicReference<Throwable> producerFailure = new AtomicReference<>();
      Thread producing = new Thread(() -> {
        try {
          summary.set(producer.run(plan.payments(), plan.rate(), i -> { }));
        } catch (Throwable t) {
          producerFailure.set(t);
        }
      }, "campaign-producer");
      producing.start();
      double seconds = plan.payments() / (double) plan.rate();
      long gap = (long) (seconds * 1000 / (schedule.size() + 1));
      Random random = new Random(plan.seed());
      for (Fault f : schedule) {
        supervise(Duration.ofMillis(Math.max(1000, gap - 8000)));
        inject(f, random);
      }
      while (producing.isAlive()) {
        supervise(Duration.ofSeconds(1));
      }
      if (producerFailure.get() != null) {
        throw new IllegalStateException("the generator failed: " + producerFailure.get(), producerFailure.get());
      }
      restartExited();
      ReconciliationReport report = LedgerReconciliation.awaitComplete(
          LedgerReconciliation.of(bootstrap, TOPIC, GROUP, dbs).bucket(Duration.ofSeconds(30)), Duration.ofMinutes(4),
          (done, expected) -> { });
      if (plan.outboxDelivery().isPresent()) {
        report = awaitOutbox(plan.outboxDelivery().get().equals("exactly-once"));
      }
      out.println("reconciled after the ledger caught up");
      List<Path> logs = new ArrayList<>();
      for (int i = 0; i < nodes.length; i++) {
        logs.add(plan.dir().resolve("node" + i + ".log"));
      }
      logs.add(plan.dir().resolve("extra.log"));
      List<String> failovers = new ArrayList<>();
      for (Map.Entry<String, LocalTime> kill : kills) {
        List<Path> others = logs.stream().filter(l -> !l.getFileName().toString().equals(kill.getKey() + ".log")).toList();
        failovers.add(kill.getKey() + " at " + kill.getValue() + ": " + OwnershipLog.firstSeekAfter(kill.getValue(), others)
            .map(d -> String.format("%.1f s", d.toMillis() / 1e3)).orElse("no seek seen"));
      }
      return new Outcome(summary.get().payments(), summary.get().duplicates(), List.copyOf(faultLog), report,
          OwnershipLog.of(logs), failovers);
    } finally {
      for (JvmProcess p : started) {
        p.close();
      }
      for (Postgres server : servers) {
        server.startServer();
        server.close();
      }
    }
  }

  /**
   * As {@code fencepost verify --outbox-topic}: the reconciliation again, with the outbox topic (read
   * read_committed) against the outbox records the journal holds for it, until none is missing there
   * (the relays publish after the journal writes) or 3 minutes passed; the last report counts.
   */
  private ReconciliationReport awaitOutbox(boolean exactlyOnce) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
    while (true) {
      ReconciliationReport report = LedgerReconciliation.of(bootstrap, TOPIC, GROUP, dbs)
          .bucket(Duration.ofSeconds(30)).outboxTopic(OUTBOX, exactlyOnce).run();
      ReconciliationReport.Outbox outbox = report.outbox().orElseThrow();
      if (outbox.missing() == 0 || System.nanoTime() > deadline) {
        out.println(outbox.render());
        return report;
      }
      Thread.sleep(2000);
    }
  }

  private List<Fault> schedule() {
    List<Fault> s = new ArrayList<>();
    for (int i = 0; i < plan.kills(); i++) {
      s.add(Fault.KILL);
    }
    for (int i = 0; i < plan.zombies(); i++) {
      s.add(Fault.ZOMBIE);
    }
    for (int i = 0; i < plan.rebalances(); i++) {
      s.add(Fault.REBALANCE);
    }
    for (int i = 0; i < plan.brokerRestarts(); i++) {
      s.add(Fault.BROKER_RESTART);
    }
    for (int i = 0; i < plan.postgresStops(); i++) {
      s.add(Fault.POSTGRES_STOP);
    }
    Collections.shuffle(s, new Random(plan.seed()));
    return s;
  }

  private void start() throws Exception {
    brokerPort = FreePorts.next();
    startBroker();
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
      List<NewTopic> topics = new ArrayList<>(List.of(new NewTopic(TOPIC, plan.partitions(), (short) 1)));
      if (plan.outboxDelivery().isPresent()) {
        topics.add(new NewTopic(OUTBOX, plan.partitions(), (short) 1));
      }
      admin.createTopics(topics).all().get(30, TimeUnit.SECONDS);
    }
    for (int i = 0; i < plan.databases(); i++) {
      Postgres server = Postgres.startEmbedded(plan.dir().resolve(i == 0 ? "postgres" : "postgres-" + i),
          FreePorts.next());
      servers.add(server);
      JournalDatabase db = server.createDatabase("campaign");
      db.installSchema();
      dbs.add(db);
    }
    ports = new int[plan.nodes()];
    nodes = new JvmProcess[plan.nodes()];
    for (int i = 0; i < ports.length; i++) {
      ports[i] = FreePorts.next();
    }
    for (int i = 0; i < ports.length; i++) {
      nodes[i] = node("node" + i, ports[i]);
    }
    for (JvmProcess n : nodes) {
      n.awaitLine("READY", Duration.ofSeconds(120));
    }
    out.printf("broker %s, %d nodes, journal %s%n", bootstrap, nodes.length,
        dbs.stream().map(JournalDatabase::jdbcUrl).toList());
  }

  private void startBroker() {
    broker = JvmProcess.start("broker", Main.class.getName(), List.of("broker", "--dir",
        plan.dir().resolve("kafka").toString(), "--port", Integer.toString(brokerPort)), plan.dir().resolve("broker.log"));
    started.add(broker);
    bootstrap = broker.awaitLine("BOOTSTRAP=", Duration.ofSeconds(120)).substring("BOOTSTRAP=".length());
  }

  private JvmProcess node(String name, int port) {
    List<String> seeds = new ArrayList<>();
    for (int p : ports) {
      seeds.add("127.0.0.1:" + p);
    }
    List<String> args = new ArrayList<>(LedgerNode.commandLine(bootstrap, TOPIC, GROUP, dbs, port, seeds));
    plan.outboxDelivery().ifPresent(d -> args.addAll(List.of("--outbox-topic", OUTBOX, "--outbox-delivery", d)));
    JvmProcess p = JvmProcess.start(name, Main.class.getName(), args, plan.dir().resolve(name + ".log"));
    started.add(p);
    return p;
  }

  /**
   * Waits {@code time} the way a process supervisor (systemd, Kubernetes) would: a node that exits
   * (one no longer live, say) is started again within half a second. A node the split-brain resolver
   * downed does not exit: its membership starts again in-process.
   */
  private void supervise(Duration time) throws InterruptedException {
    long deadline = System.nanoTime() + time.toNanos();
    do {
      restartExited();
      Thread.sleep(Math.min(500, Math.max(0, (deadline - System.nanoTime()) / 1_000_000)));
    } while (System.nanoTime() < deadline);
  }

  private void restartExited() {
    for (int i = 0; i < nodes.length; i++) {
      if (i != keptDown && !nodes[i].isAlive()) {
        restartNode(i, "it exited with status " + nodes[i].awaitExit(Duration.ZERO));
      }
    }
  }

  private void restartNode(int i, String why) {
    nodes[i] = node("node" + i, ports[i]);
    nodes[i].awaitLine("READY", Duration.ofSeconds(120));
    log("node" + i + " restarted (" + why + ")");
  }

  private void inject(Fault f, Random random) throws Exception {
    restartExited();
    int i = random.nextInt(nodes.length);
    switch (f) {
      case KILL -> {
        nodes[i].kill();
        kills.add(Map.entry("node" + i, LocalTime.now()));
        log("SIGKILL node" + i);
        keptDown = i;   // stays down while the split-brain resolver downs it and its partitions move
        supervise(Duration.ofSeconds(10));
        keptDown = -1;
        restartExited();
      }
      case ZOMBIE -> {
        nodes[i].pause();
        log("SIGSTOP node" + i);
        supervise(Duration.ofSeconds(12));   // past session.timeout.ms and the resolver's stable-after
        nodes[i].resume();
        log("SIGCONT node" + i);
        supervise(Duration.ofSeconds(5));   // the resolver downed it: it goes on, its membership rejoins
      }
      case REBALANCE -> {
        int port = FreePorts.next();
        JvmProcess extra = node("extra", port);
        extra.awaitLine("READY", Duration.ofSeconds(120));
        log("node added (rebalance)");
        supervise(Duration.ofSeconds(8));
        extra.terminate(Duration.ofSeconds(60));
        log("node removed gracefully (rebalance)");
      }
      case BROKER_RESTART -> {
        broker.terminate(Duration.ofSeconds(60));
        log("broker stopped");
        supervise(Duration.ofSeconds(3));
        startBroker();
        log("broker restarted");
      }
      case POSTGRES_STOP -> {
        // Of several journal databases, one at a time: the others' partitions go on meanwhile.
        int d = random.nextInt(servers.size());
        String which = servers.size() == 1 ? "PostgreSQL" : "PostgreSQL of journal database " + d;
        servers.get(d).stopServer();
        log(which + " stopped");
        supervise(Duration.ofSeconds(10));
        servers.get(d).startServer();
        log(which + " started");
      }
    }
  }

  private void log(String fault) {
    String line = String.format("%tT %s", System.currentTimeMillis(), fault);
    faultLog.add(line);
    out.println("fault: " + line);
  }

}
