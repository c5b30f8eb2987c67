package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.typesafe.config.ConfigFactory;
import io.fencepost.errors.RetriableException;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Postgres;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * {@code Effects.call} against a real HTTP payment provider (a local server that deduplicates by
 * idempotency key and counts raw calls) with the journal on a real PostgreSQL, across real actor
 * system crashes: between the call and the outcome's journal write, and after it.
 */
@Tag("integration")
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class ExternalCallIT {

  private static JournalDatabase postgres;
  private final List<ActorTestKit> kits = new ArrayList<>();
  private FakeProvider provider;
  private PartitionId partition;

  /** A payment provider that applies each idempotency key once and counts every request. */
  static final class FakeProvider implements AutoCloseable {
    final HttpServer server;
    final Map<String, String> charges = new ConcurrentHashMap<>();
    final Map<String, AtomicInteger> requests = new ConcurrentHashMap<>();
    final AtomicInteger applied = new AtomicInteger();
    final CountDownLatch firstRequest = new CountDownLatch(1);
    final CountDownLatch releaseFirstResponse = new CountDownLatch(1);
    volatile boolean holdFirstResponse;

    FakeProvider() throws IOException {
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
      server.createContext("/charges", this::charge);
      server.setExecutor(Executors.newCachedThreadPool());
      server.start();
    }

    private void charge(HttpExchange exchange) throws IOException {
      String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
      int n = requests.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
      String chargeId = charges.computeIfAbsent(key, k -> "ch_" + applied.incrementAndGet());
      if (n == 1 && holdFirstResponse) {
        firstRequest.countDown();
        try {
          // The charge is applied; the answer never reaches the crashed caller.
          releaseFirstResponse.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      byte[] body = chargeId.getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    }

    String url() {
      return "http://127.0.0.1:" + server.getAddress().getPort() + "/charges";
    }

    @Override
    public void close() {
      releaseFirstResponse.countDown();
      server.stop(0);
    }
  }

  record Charged(String paymentId, String chargeId, long offset) implements JacksonSerializable {
  }

  /** Charges each payment through the provider, with the framework's idempotency key. */
  static final class Charger extends PartitionActor<TestLedger.Payment, Long, Charged> {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    static final Map<String, AtomicInteger> CONTINUATION_FAILURES = new ConcurrentHashMap<>();
    private final String url;

    Charger(PartitionContext context, String url) {
      super(context);
      this.url = url;
    }

    @Override
    protected Long emptyState() {
      return 0L;
    }

    // snippet: external-call
    @Override
    protected Effects<Charged> onRecord(Long charges, Inbound<TestLedger.Payment> in) {
      TestLedger.Payment p = in.value();
      return Effects.call(
          idempotencyKey -> {
            HttpRequest request = HttpRequest.newBuilder(URI.create(url))
                .header("Idempotency-Key", idempotencyKey)
                .POST(HttpRequest.BodyPublishers.ofString("{\"amountCents\":" + p.cents() + "}"))
                .timeout(Duration.ofSeconds(10))
                .build();
            return HTTP.send(request, HttpResponse.BodyHandlers.ofString()).body();   // the charge id
          },
          chargeId -> charged(new Charged(p.paymentId(), chargeId, in.offset())));
    }
    // end-snippet: external-call

    private Effects<Charged> charged(Charged event) {
      if (CONTINUATION_FAILURES.getOrDefault(event.paymentId(), new AtomicInteger()).getAndDecrement() > 0) {
        throw new RetriableException("simulated failure after the outcome was journaled");
      }
      return Effects.persist(event);
    }

    @Override
    protected Long applyEvent(Long charges, Charged event) {
      return charges + 1;
    }

    @Override
    protected Optional<String> businessKey(Inbound<TestLedger.Payment> in) {
      return Optional.of(in.value().paymentId());
    }
  }

  @BeforeAll
  static void createDatabase() {
    postgres = Postgres.shared().createDatabase("external_call_it");
    postgres.installSchema();
  }

  @AfterAll
  static void dropDatabase() {
    Postgres.shared().dropDatabase(postgres);
  }

  @BeforeEach
  void start(TestInfo info) throws IOException {
    provider = new FakeProvider();
    partition = new PartitionId("g-" + info.getTestMethod().orElseThrow().getName() + System.nanoTime(), "payments", 0);
  }

  @AfterEach
  void stop() {
    provider.close();
    for (ActorTestKit kit : kits) {
      kit.shutdownTestKit();
    }
  }

  private ActorTestKit node() {
    ActorTestKit kit = ActorTestKit.create("node" + kits.size(), postgres.pekkoConfig().withFallback(ConfigFactory.load()));
    kits.add(kit);
    return kit;
  }

  private ActorRef<PartitionCommand> spawn(ActorTestKit kit) {
    PartitionActorSettings settings = PartitionActorSettings.create(kit.system())
        .withFailureBackoff(Duration.ofMillis(50), Duration.ofMillis(200));
    return kit.spawn(PartitionActor.behavior(partition, settings, ctx -> new Charger(ctx, provider.url())));
  }

  private BatchOutcome apply(ActorTestKit kit, ActorRef<PartitionCommand> actor, String paymentId) {
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.ApplyBatch(List.of(TestLedger.payment(partition, 0, paymentId)), probe.ref()));
    return probe.expectMessageClass(BatchOutcome.class, Duration.ofSeconds(30));
  }

  /** Every journal entry of the partition, as the public view. */
  private List<AppliedBatch> journal(ActorTestKit kit) throws Exception {
    return PersistenceQuery.get(kit.system())
        .getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier())
        .currentEventsByPersistenceId(partition.persistenceId(), 0, Long.MAX_VALUE)
        .map(env -> AppliedBatch.from(env.event()).orElseThrow())
        .runFold(new ArrayList<AppliedBatch>(), (acc, b) -> {
          acc.add(b);
          return acc;
        }, kit.system()).toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  @Test
  void aCrashBetweenTheCallAndItsJournalWriteCallsAgainWithTheSameKeyAndTheProviderAppliesOnce() throws Exception {
    provider.holdFirstResponse = true;
    ActorTestKit first = node();
    TestProbe<BatchOutcome> lost = first.createTestProbe();
    spawn(first).tell(new PartitionCommand.ApplyBatch(List.of(TestLedger.payment(partition, 0, "pay-1")), lost.ref()));
    assertTrue(provider.firstRequest.await(30, TimeUnit.SECONDS), "the provider got the first call");
    first.shutdownTestKit();                      // the process dies before the outcome is journaled
    kits.remove(first);
    provider.releaseFirstResponse.countDown();

    ActorTestKit second = node();
    BatchOutcome outcome = apply(second, spawn(second), "pay-1");   // the record is redelivered

    assertEquals(new BatchOutcome.Applied(partition, 1, 1, 0, 0, true, 0, 0), outcome);
    assertEquals(2, provider.requests.get("pay-1").get(), "raw calls the provider saw for the key");
    assertEquals(1, provider.applied.get(), "charges the provider applied");
    List<AppliedBatch> entries = journal(second);
    List<AppliedBatch.CallView> outcomes = entries.stream().flatMap(b -> b.calls().stream()).toList();
    assertEquals(List.of(new AppliedBatch.CallView(0, "pay-1", "ch_1")), outcomes, "outcomes in the journal");
    assertEquals(List.of(new Charged("pay-1", "ch_1", 0)), entries.stream().flatMap(b -> b.events().stream()).toList());
  }

  @Test
  void aRecordRedeliveredAfterItsOutcomeWasJournaledGetsTheStoredOutcomeWithoutACall() throws Exception {
    Charger.CONTINUATION_FAILURES.put("pay-2", new AtomicInteger(1));
    ActorTestKit first = node();
    BatchOutcome failed = apply(first, spawn(first), "pay-2");   // outcome journaled, then the batch fails
    assertInstanceOf(BatchOutcome.Rejected.class, failed);
    first.shutdownTestKit();                                      // and the process dies
    kits.remove(first);

    ActorTestKit second = node();
    BatchOutcome outcome = apply(second, spawn(second), "pay-2");

    assertEquals(new BatchOutcome.Applied(partition, 1, 1, 0, 0, true, 0, 0), outcome);
    assertEquals(1, provider.requests.get("pay-2").get(), "the provider was called once only");
    List<AppliedBatch> entries = journal(second);
    assertEquals(1, entries.stream().mapToLong(b -> b.calls().size()).sum(), "outcomes in the journal");
    assertEquals(List.of(new Charged("pay-2", "ch_1", 0)), entries.stream().flatMap(b -> b.events().stream()).toList());
  }
}
