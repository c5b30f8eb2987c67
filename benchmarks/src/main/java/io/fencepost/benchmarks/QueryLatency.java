package io.fencepost.benchmarks;

import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.fencepost.embedded.Directories;
import io.fencepost.embedded.FreePorts;
import io.fencepost.embedded.JvmProcess;
import io.fencepost.embedded.Postgres;
import io.fencepost.examples.BalanceOf;
import io.fencepost.examples.LedgerNode;
import io.fencepost.examples.Payment;
import io.fencepost.examples.PaymentJson;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.QueryTarget;
import io.fencepost.tools.Main;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Query latency and what queries cost the ledger's ingest: two ledger nodes of one cluster, node 0 in
 * this JVM and node 1 in its own (the broker in a third, the journal on an embedded PostgreSQL),
 * {@value #PARTITIONS} partitions; queries are {@code Pipeline.query} calls on node 0 for a merchant's
 * balance. An answer is "local" when node 0 owns the merchant's partition and "remote" when node 1
 * answered over the cluster (Artery on loopback, both messages serialized).
 *
 * <ol>
 *   <li>idle: {@value #LATENCY_QPS} queries/s for {@value #LATENCY_SECONDS} s, no ingest (after 10 s of
 *       queries not measured: the query path's JIT warm-up);</li>
 *   <li>ingest: a backlog of {@code backlog} payments applied from the first send to the last
 *       apply, alternately without queries and with {@value #LOAD_QPS} queries/s, {@value #ROUNDS} times each;</li>
 *   <li>loaded: payments at half the ingest rate measured without queries, while
 *       {@value #LATENCY_QPS} queries/s run for {@value #LATENCY_SECONDS} s.</li>
 * </ol>
 *
 * <p>Latency is measured from the call to the completion of its result: routing, the owner's answer
 * and, for a remote one, the round trip over Artery. Run: {@code QueryLatency [backlog]}
 * (default 300,000).
 */
final class QueryLatency {

  static final String TOPIC = "payments";
  static final int PARTITIONS = 8;
  static final int LATENCY_QPS = 200;
  static final int LATENCY_SECONDS = 15;
  static final int LOAD_QPS = 1000;
  static final int ROUNDS = 4;
  static final int CPU_SECONDS = 10;
  private static final Duration START_LIMIT = Duration.ofSeconds(120);

  /** For the nodes' Prometheus pages. */
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private final int[] management = new int[2];
  private final PrintStream out;
  private String bootstrap;
  private int idBlock;

  private QueryLatency(PrintStream out) {
    this.out = out;
  }

  public static void main(String[] args) throws Exception {
    int backlog = args.length > 0 ? Integer.parseInt(args[0]) : 300_000;
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : ROUNDS;
    try {
      new QueryLatency(System.out).run(backlog, rounds);
      System.exit(0);
    } catch (Exception | Error e) {
      e.printStackTrace();
      System.exit(1);   // the query load's threads must not keep a failed run alive
    }
  }

  private void run(int backlog, int rounds) throws Exception {
    Path dir = Path.of("target", "query-latency").toAbsolutePath();
    Directories.deleteRecursively(dir);
    List<JvmProcess> started = new ArrayList<>();
    Postgres postgres = null;
    LedgerNode node0 = null;
    try {
      JvmProcess broker = JvmProcess.start("broker", Main.class.getName(), List.of("broker", "--dir",
          dir.resolve("kafka").toString(), "--port", Integer.toString(FreePorts.next()), "--topic",
          TOPIC + ":" + PARTITIONS), dir.resolve("broker.log"));
      started.add(broker);
      bootstrap = broker.awaitLine("BOOTSTRAP=", START_LIMIT).substring("BOOTSTRAP=".length());
      postgres = Postgres.startEmbedded(dir.resolve("postgres"), FreePorts.next());
      JournalDatabase db = postgres.createDatabase("query_latency");
      db.installSchema();
      int[] ports = {FreePorts.next(), FreePorts.next()};
      List<String> contacts = List.of("127.0.0.1:" + ports[0], "127.0.0.1:" + ports[1]);
      management[0] = FreePorts.next();
      management[1] = FreePorts.next();
      // Node 0 runs in this JVM: queries are Pipeline.query calls, answered here (local) or by node 1
      // over Artery (remote). Node 1 is a process of its own.
      List<String> args = new ArrayList<>(LedgerNode.commandLine(bootstrap, TOPIC, "ledger", db, ports[1], contacts));
      args.addAll(List.of("--management-port", Integer.toString(management[1])));
      JvmProcess node1 = JvmProcess.start("node1", Main.class.getName(), args, dir.resolve("node1.log"));
      started.add(node1);
      node0 = LedgerNode.start(bootstrap, TOPIC, "ledger", db, "127.0.0.1", ports[0], contacts, Optional.empty(),
          Optional.of(Map.entry("127.0.0.1", management[0])));
      node1.awaitLine("READY", START_LIMIT);
      out.printf(Locale.ROOT, "2 ledger nodes (node 0 in this JVM), %d partitions, journal %s; logs in %s%n",
          PARTITIONS, db.jdbcUrl(), dir);
      // Warm-up: JIT, pools, every partition's actor, PostgreSQL's caches (a first backlog ingests at
      // half the rate of the next ones: the rounds below compare steady states).
      long applied = ingest(20_000);
      applied = ingest(2 * backlog);
      out.printf(Locale.ROOT, "warm-up: %,d payments applied%n", applied);
      Load warmUp = new Load(node0.pipeline(), LATENCY_QPS);   // the query path's own warm-up, not measured
      Thread.sleep(10_000);
      warmUp.stop();
      latency(node0.pipeline(), "idle", null);
      cpuPerQuery(node0.pipeline(), node1);
      if (rounds == 0) {
        return;
      }

      List<Double> without = new ArrayList<>();
      List<Double> with = new ArrayList<>();
    List<Double> achieved = new ArrayList<>();
      for (int round = 0; round < rounds; round++) {
        long t0 = System.nanoTime();
        ingest(backlog);
        without.add(backlog / ((System.nanoTime() - t0) / 1e9));
        t0 = System.nanoTime();
        Load queries = new Load(node0.pipeline(), LOAD_QPS);
        try {
          ingest(backlog);
        } finally {
          queries.stop();
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        with.add(backlog / seconds);
        achieved.add(queries.answered.get() / seconds);
        out.printf(Locale.ROOT, "round %d: ingest %,.0f payments/s without queries, %,.0f/s with %,d queries/s asked "
            + "(%,d answered: %,.0f/s; %,d failed)%n", round + 1, without.get(round), with.get(round), LOAD_QPS,
            queries.answered.get(), achieved.get(round), queries.failed.get());
        queries.reasons.forEach((why, n) -> out.printf(Locale.ROOT, "  %,d failed: %s%n", n, why));
      }
      double rateWithout = median(without);
      double rateWith = median(with);
      out.printf(Locale.ROOT, "ingest: median %,.0f payments/s without queries, %,.0f/s with queries (%,.0f/s "
          + "answered, median): %.2fx%n", rateWithout, rateWith, median(achieved), rateWith / rateWithout);

      SteadyPayments payments = new SteadyPayments(bootstrap, TOPIC, rateWithout / 2, "steady-");
      payments.start();
      Thread.sleep(5_000);
      latency(node0.pipeline(), String.format(Locale.ROOT, "loaded (%,.0f payments/s)", rateWithout / 2), payments);
      payments.stop();
      payments.check();
    } finally {
      if (node0 != null) {
        node0.close();
      }
      List<JvmProcess> byAge = new ArrayList<>(started);
      Collections.reverse(byAge);   // the nodes before the broker
      byAge.forEach(p -> p.terminate(Duration.ofSeconds(30)));
      if (postgres != null) {
        postgres.close();
      }
      Directories.deleteRecursively(dir.resolve("postgres"));
      Directories.deleteRecursively(dir.resolve("kafka"));
    }
  }

  /** Sends {@code count} new payments as fast as the producer goes and waits until all are applied. */
  private long ingest(int count) throws Exception {
    long target = applied() + count;
    int block = ++idBlock;
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    try (KafkaProducer<String, Payment> producer = new KafkaProducer<>(p, new StringSerializer(), new PaymentJson())) {
      for (int i = 0; i < count; i++) {
        String merchant = Workload.merchant(i);
        producer.send(new ProducerRecord<>(TOPIC, merchant, new Payment("b" + block + "-" + i, merchant,
            Workload.cents(i))));
      }
    }
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
    long now;
    while ((now = applied()) < target) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("applied " + now + " of " + target + " within 5 minutes");
      }
      Thread.sleep(20);
    }
    return now;
  }

  /** Payments applied by both nodes (their Prometheus counters, summed over their partitions). */
  private long applied() throws Exception {
    long sum = 0;
    for (int m : management) {
      String body = get("http://127.0.0.1:" + m + "/metrics").body();
      for (String line : body.split("\n")) {
        if (line.startsWith("fencepost_records_applied_total{")) {
          sum += (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
        }
      }
    }
    return sum;
  }

  /**
   * The CPU time {@value #LOAD_QPS} queries/s take on an idle ledger: each node's process CPU over
   * {@value #CPU_SECONDS} s with them, less over {@value #CPU_SECONDS} s without, per query answered;
   * for merchants of node 0's partitions (local answers), then of node 1's (remote ones), twice each
   * (the first of a kind still compiles its path). Node 0's share holds the load generator and the
   * routing; node 1's the remote answers.
   */
  private void cpuPerQuery(Pipeline pipeline, JvmProcess node1) throws Exception {
    List<String> local = new ArrayList<>();
    List<String> remote = new ArrayList<>();
    for (int m = 0; m < Workload.MERCHANTS; m++) {
      String merchant = Workload.merchant(m);
      boolean here = pipeline.query(QueryTarget.key(TOPIC, merchant), new BalanceOf(merchant)).toCompletableFuture()
          .get(10, TimeUnit.SECONDS).local();
      (here ? local : remote).add(merchant);
    }
    for (String kind : List.of("local", "remote", "local", "remote")) {
      Thread.sleep(1_000);   // the last answers of the load before
      long[] quiet = ProcessCpu.over(node1.pid(), CPU_SECONDS);
      Load load = new Load(pipeline, LOAD_QPS, kind.equals("local") ? local : remote);
      long[] busy = ProcessCpu.over(node1.pid(), CPU_SECONDS);
      load.stop();
      long answered = load.answered.get();
      out.printf(Locale.ROOT, "CPU per %s query (%,d/s asked, %,d answered in %d s): node 0 %.0f us, node 1 %.0f us, "
          + "%.0f us in all; %,d failed%n", kind, LOAD_QPS, answered, CPU_SECONDS,
          ProcessCpu.microsEach(busy[0] - quiet[0], answered), ProcessCpu.microsEach(busy[1] - quiet[1], answered),
          ProcessCpu.microsEach(busy[0] + busy[1] - quiet[0] - quiet[1], answered), load.failed.get());
    }
  }

  /** {@value #LATENCY_QPS} queries/s for {@value #LATENCY_SECONDS} s; prints p50/p99 local and remote. */
  private void latency(Pipeline pipeline, String label, SteadyPayments payments) throws Exception {
    Load load = new Load(pipeline, LATENCY_QPS);
    try {
      Thread.sleep(TimeUnit.SECONDS.toMillis(LATENCY_SECONDS));
    } finally {
      load.stop();
    }
    if (payments != null) {
      payments.check();
    }
    List<Long> local = new ArrayList<>(load.local);
    List<Long> remote = new ArrayList<>(load.remote);
    Collections.sort(local);
    Collections.sort(remote);
    out.printf(Locale.ROOT, "%s: %,d queries (%,d failed); local p50 %.2f ms, p99 %.2f ms (%,d); remote p50 %.2f ms, "
        + "p99 %.2f ms (%,d)%n", label, local.size() + remote.size() + load.failed.get(), load.failed.get(),
        millis(local, 50), millis(local, 99), local.size(), millis(remote, 50), millis(remote, 99), remote.size());
  }

  /** Open-loop queries through node 0 at a fixed rate, each timed from its send to its answer. */
  private final class Load {
    final ConcurrentLinkedQueue<Long> local = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<Long> remote = new ConcurrentLinkedQueue<>();
    final AtomicLong answered = new AtomicLong();
    final AtomicLong failed = new AtomicLong();
    final Map<String, Integer> reasons = new java.util.concurrent.ConcurrentHashMap<>();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "query-load");
      t.setDaemon(true);
      return t;
    });
    private final AtomicLong sent = new AtomicLong();

    private final Pipeline pipeline;

    private final List<String> merchants;

    Load(Pipeline pipeline, int perSecond) {
      this(pipeline, perSecond, null);
    }

    /** Queries for {@code merchants} in turn ({@code null}: every merchant). */
    Load(Pipeline pipeline, int perSecond, List<String> merchants) {
      this.pipeline = pipeline;
      this.merchants = merchants;
      long periodMicros = 1_000_000L / perSecond;
      timer.scheduleAtFixedRate(this::one, 0, periodMicros, TimeUnit.MICROSECONDS);
    }

    private void one() {
      int n = (int) sent.getAndIncrement();
      String merchant = merchants == null ? Workload.merchant(n) : merchants.get(n % merchants.size());
      long start = System.nanoTime();
      pipeline.query(QueryTarget.key(TOPIC, merchant), new BalanceOf(merchant)).whenComplete((r, e) -> {
        long took = System.nanoTime() - start;
        if (e != null) {
          failed.incrementAndGet();
          Throwable cause = e.getCause() != null ? e.getCause() : e;
          String why = cause.getClass().getSimpleName() + ": " + cause.getMessage();
          reasons.merge(why.length() > 160 ? why.substring(0, 160) : why, 1, Integer::sum);
        } else {
          answered.incrementAndGet();
          (r.local() ? local : remote).add(took);
        }
      });
    }

    void stop() throws InterruptedException {
      timer.shutdown();
      timer.awaitTermination(5, TimeUnit.SECONDS);
      Thread.sleep(1_000);   // the last answers
    }
  }

  private HttpResponse<String> get(String url) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static double millis(List<Long> sorted, int p) {
    if (sorted.isEmpty()) {
      return Double.NaN;
    }
    return sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(p / 100.0 * sorted.size()) - 1)) / 1e6;
  }

  private static double median(List<Double> values) {
    List<Double> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    return sorted.get(sorted.size() / 2);
  }
}
