package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.function.LongSupplier;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.errors.SettingsException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PartitionActorSettingsTest {

  private static Config with(String override) {
    return ConfigFactory.parseString(override).withFallback(ConfigFactory.defaultReference());
  }

  @Test
  void defaultsAreExactlyOnceWithADayLongWindow() {
    PartitionActorSettings s = PartitionActorSettings.create(ConfigFactory.defaultReference());
    assertEquals(DeliveryMode.EXACTLY_ONCE, s.deliveryMode());
    assertEquals(1000, s.snapshotEvery());
    assertEquals(Duration.ofHours(24), s.keyWindowMaxAge());
    assertEquals(1_000_000, s.keyWindowMaxKeys());
    assertEquals("idempotency-key", s.keyHeader());
    assertEquals(Duration.ofMillis(20), s.atMostOnceLinger());
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "fencepost.partition-actor.delivery-mode = twice        | fencepost.partition-actor.delivery-mode | must be one of exactly-once, at-least-once, at-most-once",
      "fencepost.partition-actor.snapshot-every = 0           | fencepost.partition-actor.snapshot-every | must be > 0",
      "fencepost.partition-actor.snapshot-every = lots        | fencepost.partition-actor.snapshot-every | has the wrong type",
      "fencepost.partition-actor.keep-snapshots = -1          | fencepost.partition-actor.keep-snapshots | must be > 0",
      "fencepost.partition-actor.key-window.max-keys = 0      | fencepost.partition-actor.key-window.max-keys | must be > 0",
      "fencepost.partition-actor.key-window.max-keys = 600000000 | fencepost.partition-actor.key-window.max-keys | must be <= 536870912",
      "fencepost.partition-actor.key-window.max-age = 0s      | fencepost.partition-actor.key-window.max-age | must be > 0",
      "fencepost.partition-actor.key-window.max-age = soon    | fencepost.partition-actor.key-window.max-age | has the wrong type",
      "fencepost.partition-actor.key-window.enabled = maybe   | fencepost.partition-actor.key-window.enabled | has the wrong type",
      "fencepost.partition-actor.at-most-once-linger = -1ms   | fencepost.partition-actor.at-most-once-linger | must be >= 0",
      "fencepost.partition-actor.failure-backoff.min = 0ms    | fencepost.partition-actor.failure-backoff.min | must be > 0",
      "fencepost.partition-actor.failure-backoff.max = 1ms    | fencepost.partition-actor.failure-backoff.max | must be >= failure-backoff.min",
      "fencepost.partition-actor.failure-backoff.random-factor = 2 | fencepost.partition-actor.failure-backoff.random-factor | must be between 0.0 and 1.0"})
  void invalidSettingsFailNamingTheKeyAndTheRule(String override, String key, String rule) {
    SettingsException e = assertThrows(SettingsException.class, () -> PartitionActorSettings.create(with(override)));
    assertEquals(key, e.key());
    assertTrue(e.getMessage().startsWith(key + " "), e.getMessage());
    assertTrue(e.getMessage().contains(rule), e.getMessage());
  }

  @Test
  void aPipelineSectionReportsItsOwnPath() {
    Config section = ConfigFactory.parseString("snapshot-every = 0")
        .withFallback(ConfigFactory.defaultReference().getConfig(PartitionActorSettings.CONFIG_PATH));
    SettingsException e = assertThrows(SettingsException.class,
        () -> PartitionActorSettings.fromSection(section, "fencepost.pipelines.ledger.partition-actor"));
    assertEquals("fencepost.pipelines.ledger.partition-actor.snapshot-every", e.key());
  }

  @Test
  void guaranteeStatementNamesEachHop() {
    PartitionActorSettings s = PartitionActorSettings.create(ConfigFactory.defaultReference());
    String text = GuaranteeStatement.of(s, "jdbc-journal").render();
    assertEquals("exactly-once; hop 1: business-key window 24h / 1,000,000 keys per partition (a re-send older "
        + "than the window is applied again); hop 2: offset fence, no expiry: offsets below the stored next offset "
        + "are dropped; hop 3: effects atomic with the next offset in one write to journal jdbc-journal: nothing "
        + "lost, nothing doubled", text);
    assertTrue(GuaranteeStatement.of(s.withDeliveryMode(DeliveryMode.AT_MOST_ONCE), "j").hop3().contains("LOSES"));
  }

  /** One copy method: every withX keeps every other value (the window's clocks included) and is validated. */
  @Test
  void everyWithKeepsTheOtherValuesAndIsValidatedNamingItsKey() {
    PartitionActorSettings base = PartitionActorSettings.create(ConfigFactory.defaultReference());
    LongSupplier wall = () -> 42L;
    LongSupplier mono = () -> 7L;
    PartitionActorSettings changed = base.withClocks(wall, mono).withSnapshotEvery(5).withKeepSnapshots(3)
        .withKeyWindowMaxKeys(10).withKeyWindowMaxAge(Duration.ofMinutes(1)).withKeyWindowEnabled(false)
        .withJournalPluginId("j").withSnapshotPluginId("s").withFailureBackoffRandomFactor(0.5);
    assertEquals(42L, changed.wallMillis().getAsLong(), "a later withX keeps the clocks");
    assertEquals(7L, changed.monotonicNanos().getAsLong());
    assertEquals(List.of(5, 3, 10), List.of(changed.snapshotEvery(), changed.keepSnapshots(),
        changed.keyWindowMaxKeys()));
    assertEquals(List.of("j", "s"), List.of(changed.journalPluginId(), changed.snapshotPluginId()));
    assertEquals(false, changed.keyWindowEnabled());
    assertEquals(0.5, changed.backoffRandomFactor());
    assertEquals(base.deliveryMode(), changed.deliveryMode());
    assertEquals(1000, base.snapshotEvery(), "settings are immutable");

    assertEquals("fencepost.partition-actor.keep-snapshots",
        assertThrows(SettingsException.class, () -> base.withKeepSnapshots(0)).key());
    assertEquals("fencepost.partition-actor.failure-backoff.random-factor",
        assertThrows(SettingsException.class, () -> base.withFailureBackoffRandomFactor(2)).key());
    assertEquals("fencepost.partition-actor.key-window.max-age",
        assertThrows(SettingsException.class, () -> base.withKeyWindowMaxAge(Duration.ZERO)).key());
  }
}
