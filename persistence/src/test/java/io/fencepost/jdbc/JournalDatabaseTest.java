package io.fencepost.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.typesafe.config.Config;
import org.junit.jupiter.api.Test;

class JournalDatabaseTest {

  private static final String POOL = "pekko-persistence-jdbc.shared-databases.slick.db.";

  @Test
  void aPostgresPoolFetchesResultsInBinaryFromTheFirstExecution() {
    Config c = JournalDatabase.of("jdbc:postgresql://db:5432/ledger", "ledger", "secret").pekkoConfig();
    assertEquals("-1", c.getString(POOL + "properties.prepareThreshold"));
    assertEquals("jdbc:postgresql://db:5432/ledger", c.getString(POOL + "url"));
  }

  @Test
  void aUrlThatSetsPrepareThresholdKeepsIt() {
    Config c = JournalDatabase.of("jdbc:postgresql://db:5432/ledger?prepareThreshold=0", "ledger", "secret")
        .pekkoConfig();
    assertFalse(c.hasPath(POOL + "properties.prepareThreshold"));
  }

  @Test
  void anH2PoolHasNoPostgresProperty() {
    assertFalse(JournalDatabase.h2Memory("j" + System.nanoTime()).pekkoConfig().hasPath(POOL + "properties"));
  }
}
