package io.fencepost.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.DeliveryMode;
import io.fencepost.errors.SettingsException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PipelineSettingsTest {

  private static Config with(String hocon) {
    return ConfigFactory.parseString(hocon).withFallback(ConfigFactory.defaultReference());
  }

  private static final String VALID = "fencepost.pipelines.ledger { bootstrap-servers = \"k:9092\", topics = [payments] }\n";

  @Test
  void aPipelineSectionOverridesTheSharedDefaults() {
    PipelineSettings s = PipelineSettings.create(with(VALID
        + "fencepost.pipeline.batch.max-records = 77\n"
        + "fencepost.pipelines.ledger.partition-actor.delivery-mode = at-least-once\n"), "ledger");
    assertEquals("k:9092", s.bootstrapServers());
    assertEquals(List.of("payments"), s.topics());
    assertEquals("ledger", s.groupId(), "group id defaults to the pipeline name");
    assertEquals(77, s.batch().maxRecords());
    assertEquals(Duration.ofMillis(20), s.batch().maxLatency());
    assertEquals(DeliveryMode.AT_LEAST_ONCE, s.partitionActor().deliveryMode());
    assertEquals(1_000_000, s.partitionActor().keyWindowMaxKeys(), "other actor keys fall back to fencepost.partition-actor");
    assertEquals(false, s.outbox().enabled(), "the outbox relay is off unless asked for");
    assertEquals(Duration.ofSeconds(1), s.outbox().storePositionEvery());
    assertEquals(OutboxSettings.Delivery.AT_LEAST_ONCE, s.outbox().delivery());
    assertEquals("fencepost-outbox-positions", s.outbox().positionTopic());
  }

  @Test
  void aBatchInFlightIsTakenAsHungOnlyAfterTheLongestWaitOfADeliveryAndAStallTimeoutMore() {
    PipelineSettings s = PipelineSettings.create(with(VALID), "ledger");
    assertEquals(Duration.ofSeconds(60), s.stallTimeout());
    assertEquals(Duration.ofSeconds(245), RunningPipeline.silentAfter(s, Duration.ofSeconds(185)),
        "a dead-letter attempt (max.block.ms 60 s + delivery.timeout.ms 120 s + 5 s), plus stall-timeout");
    assertEquals(Duration.ofSeconds(180), RunningPipeline.silentAfter(s, Duration.ofSeconds(35)),
        "twice stall-timeout, plus stall-timeout");
    PipelineSettings slowAsk = s.withAskTimeout(Duration.ofMinutes(5));
    assertEquals(Duration.ofSeconds(300 + 10 + 60), RunningPipeline.silentAfter(slowAsk, Duration.ofSeconds(35)),
        "ask-timeout and a resend's backoff, plus stall-timeout");
    PipelineSettings slowHandler = s.withHandlerRetry(s.handlerRetry().withMax(Duration.ofMinutes(4)));
    assertEquals(Duration.ofSeconds(240 + 30 + 60), RunningPipeline.silentAfter(slowHandler, Duration.ofSeconds(35)),
        "a handler retry's backoff and the ask after it, plus stall-timeout");
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "fencepost.pipelines.ledger.kafka-clients.\"enable.auto.commit\" = true | fencepost.pipelines.ledger.kafka-clients.enable.auto.commit | at-most-once in disguise",
      "fencepost.pipelines.ledger.kafka-clients.\"group.id\" = other | fencepost.pipelines.ledger.kafka-clients.group.id | use fencepost.pipelines.ledger.group-id",
      "fencepost.pipelines.ledger.ask-timeout = 10ms | fencepost.pipelines.ledger.ask-timeout | must be longer than batch.max-latency",
      "fencepost.pipelines.ledger.batch.max-records = 0 | fencepost.pipelines.ledger.batch.max-records | must be > 0",
      "fencepost.pipelines.ledger.auto-offset-reset = none | fencepost.pipelines.ledger.auto-offset-reset | must be earliest or latest",
      "fencepost.pipelines.ledger.retry-backoff.max = 1ms | fencepost.pipelines.ledger.retry-backoff.max | must be >= retry-backoff.min",
      "fencepost.pipelines.ledger.topics = [\" \"] | fencepost.pipelines.ledger.topics | must hold non-empty topic names",
      "fencepost.pipelines.ledger.partition-actor.snapshot-every = 0 | fencepost.pipelines.ledger.partition-actor.snapshot-every | must be > 0",
      "fencepost.pipelines.ledger.commit.max-interval = soon | fencepost.pipelines.ledger.commit.max-interval | wrong type",
      "fencepost.pipelines.ledger.outbox.producer-kafka-clients.\"enable.idempotence\" = false | fencepost.pipelines.ledger.outbox.producer-kafka-clients.enable.idempotence | must be true",
      "fencepost.pipelines.ledger.outbox.producer-kafka-clients.acks = 1 | fencepost.pipelines.ledger.outbox.producer-kafka-clients.acks | must be all",
      "fencepost.pipelines.ledger.outbox.producer-kafka-clients.\"max.in.flight.requests.per.connection\" = 6 | fencepost.pipelines.ledger.outbox.producer-kafka-clients.max.in.flight.requests.per.connection | between 1 and 5",
      "fencepost.pipelines.ledger.outbox.producer-kafka-clients.\"transactional.id\" = t1 | fencepost.pipelines.ledger.outbox.producer-kafka-clients.transactional.id | must not be set",
      "fencepost.pipelines.ledger.outbox.delivery = twice | fencepost.pipelines.ledger.outbox.delivery | must be exactly-once or at-least-once",
      "fencepost.pipelines.ledger.outbox.delivery = exactly-once, fencepost.pipelines.ledger.outbox.position-topic = \"a b\" | fencepost.pipelines.ledger.outbox.position-topic | must be a valid Kafka topic name",
      "fencepost.pipelines.ledger.outbox.delivery = exactly-once, fencepost.pipelines.ledger.outbox.producer-kafka-clients.transaction.timeout.ms = 90000 | fencepost.pipelines.ledger.outbox.producer-kafka-clients.transaction.timeout.ms | must be longer than delivery.timeout.ms + max.block.ms (30000 + 60000 ms)",
      "fencepost.pipelines.ledger.outbox.producer-kafka-clients { \"delivery.timeout.ms\" = 5000 } | fencepost.pipelines.ledger.outbox.producer-kafka-clients.delivery.timeout.ms | is set twice, as [\"delivery.timeout.ms\"] (a quoted key) and as [delivery.timeout.ms] (a path, as reference.conf sets defaults and -D system properties always are), and only one would apply: write it unquoted, delivery.timeout.ms = <value>",
      "fencepost.pipelines.ledger.kafka-clients { \"max.poll.records\" = 10, max.poll.records = 20 } | fencepost.pipelines.ledger.kafka-clients.max.poll.records | is set twice",
      "fencepost.pipelines.ledger.outbox.transaction-interval = 0s | fencepost.pipelines.ledger.outbox.transaction-interval | must be > 0",
      "fencepost.pipelines.ledger.outbox.store-position-every = 0s | fencepost.pipelines.ledger.outbox.store-position-every | must be > 0",
      "fencepost.pipelines.ledger.outbox.read-journal-plugin-id = \"\" | fencepost.pipelines.ledger.outbox.read-journal-plugin-id | must name a Pekko persistence query plugin",
      "fencepost.pipelines.ledger.partition-actor.external-call.timeout = 0s | fencepost.pipelines.ledger.partition-actor.external-call.timeout | must be > 0",
      "fencepost.pipelines.ledger.partition-actor.external-call.timeout = 1h | fencepost.pipelines.ledger.partition-actor.external-call.timeout | must be shorter than ask-timeout"})
  void weakeningOrInvalidSettingsAreRefusedNamingTheKey(String override, String key, String rule) {
    SettingsException e = assertThrows(SettingsException.class,
        () -> PipelineSettings.create(with(VALID + override), "ledger"));
    assertEquals(key, e.key());
    assertTrue(e.getMessage().contains(rule), e.getMessage());
  }

  @Test
  void bootstrapServersAndTopicsAreRequiredWhenThePipelineIsCreated() {
    PipelineSettings incomplete = PipelineSettings.create(ConfigFactory.defaultReference(), "ledger");
    SettingsException e = assertThrows(SettingsException.class, incomplete::requireComplete);
    assertEquals("fencepost.pipelines.ledger.bootstrap-servers", e.key());
    SettingsException t = assertThrows(SettingsException.class,
        () -> incomplete.withBootstrapServers("k:9092").requireComplete());
    assertEquals("fencepost.pipelines.ledger.topics", t.key());
  }

  @Test
  void pipelineNamesAreValidated() {
    SettingsException e = assertThrows(SettingsException.class,
        () -> PipelineSettings.create(ConfigFactory.defaultReference(), "no spaces"));
    assertTrue(e.getMessage().contains("letters, digits"), e.getMessage());
  }

  @Test
  void everyWithIsValidatedLikeTheConfigurationAndLeavesTheOriginalUnchanged() {
    PipelineSettings base = PipelineSettings.create(with(VALID), "ledger");
    PipelineSettings changed = base.withAskTimeout(Duration.ofSeconds(25))
        .withBatch(base.batch().withMaxRecords(50))
        .withCommit(base.commit().withMaxBatch(10).withMaxInterval(Duration.ofMillis(300)))
        .withHandlerRetry(base.handlerRetry().withMaxAttempts(2))
        .withDeadLetter(base.deadLetter().withCreateTopic(false))
        .withRetryBackoff(base.retryBackoff().withMin(Duration.ofMillis(5)).withMax(Duration.ofMillis(50)))
        .withStallTimeout(Duration.ofSeconds(7))
        .withDrainTimeout(Duration.ofSeconds(2))
        .withProgressInterval(Duration.ZERO)
        .withAutoOffsetReset(AutoOffsetReset.LATEST);
    assertEquals(Duration.ofSeconds(25), changed.askTimeout());
    assertEquals(50, changed.batch().maxRecords());
    assertEquals(Duration.ofMillis(20), changed.batch().maxLatency());
    assertEquals(10, changed.commit().maxBatch());
    assertEquals(2, changed.handlerRetry().maxAttempts());
    assertEquals(false, changed.deadLetter().createTopic());
    assertEquals("payments.dlt", changed.deadLetter().topicFor("payments"));
    assertEquals(Duration.ofMillis(50), changed.retryBackoff().max());
    assertEquals(Duration.ofSeconds(7), changed.stallTimeout());
    assertEquals(Duration.ZERO, changed.progressInterval());
    assertEquals(AutoOffsetReset.LATEST, changed.autoOffsetReset());
    assertEquals(Duration.ofSeconds(30), base.askTimeout(), "settings are immutable");
    assertEquals(Duration.ofSeconds(30), base.progressInterval());
    assertEquals(1000, base.batch().maxRecords());

    SettingsException ask = assertThrows(SettingsException.class, () -> base.withAskTimeout(Duration.ofMillis(10)));
    assertEquals("fencepost.pipelines.ledger.ask-timeout", ask.key());
    SettingsException attempts = assertThrows(SettingsException.class,
        () -> base.withHandlerRetry(base.handlerRetry().withMaxAttempts(0)));
    assertEquals("fencepost.pipelines.ledger.handler-retry.max-attempts", attempts.key());
    SettingsException progress = assertThrows(SettingsException.class,
        () -> base.withProgressInterval(Duration.ofSeconds(-1)));
    assertEquals("fencepost.pipelines.ledger.progress-interval", progress.key());
    SettingsException autoCommit = assertThrows(SettingsException.class,
        () -> base.withKafkaClient("enable.auto.commit", "true"));
    assertEquals("fencepost.pipelines.ledger.kafka-clients.enable.auto.commit", autoCommit.key());
    assertEquals(Duration.ofSeconds(30), base.deadAfter());
    SettingsException deadAfter = assertThrows(SettingsException.class, () -> base.withDeadAfter(Duration.ZERO));
    assertEquals("fencepost.pipelines.ledger.dead-after", deadAfter.key());
  }
}
