package io.fencepost.management.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.typesafe.config.ConfigFactory;
import io.fencepost.errors.SettingsException;
import org.junit.jupiter.api.Test;

/** A misconfigured query route is refused when the management endpoints start, naming the key and the fix. */
class QueryRoutesTest {

  private static String refusal(String config) {
    return assertThrows(SettingsException.class, () -> QueryRoutes.read(ConfigFactory.parseString(config)))
        .getMessage();
  }

  @Test
  void aRouteMissingAKeyOrNamingAClassThatIsNoHttpQueryIsRefused() {
    assertEquals("fencepost.management.queries.balances.topic must be set (a query route names its pipeline, its "
        + "topic and its request class), was []",
        refusal("fencepost.management.queries.balances { pipeline = ledger, request = x.Y }"));
    assertEquals("fencepost.management.queries.balances.request must name a class implementing "
        + "io.fencepost.management.http.HttpQuery, was [java.lang.String]",
        refusal("fencepost.management.queries.balances { pipeline = ledger, topic = t, request = java.lang.String }"));
    assertEquals(true, refusal("fencepost.management.queries.balances { pipeline = ledger, topic = t, "
        + "request = com.acme.Missing }").startsWith("fencepost.management.queries.balances.request must name a class "
        + "with a public no-argument constructor (java.lang.ClassNotFoundException: com.acme.Missing)"));
    assertEquals("fencepost.management.queries.balances must be a block { pipeline, topic, request }, was [ledger]",
        refusal("fencepost.management.queries.balances = ledger"));
    assertEquals("fencepost.management.queries.balances.pipeline must be a string, was [{a=1}]",
        refusal("fencepost.management.queries.balances { pipeline { a = 1 }, topic = t, request = x.Y }"));
    assertEquals("fencepost.management.queries.\"a.b\".topic must be set (a query route names its pipeline, its "
        + "topic and its request class), was []",
        refusal("fencepost.management.queries { \"a.b\" { pipeline = ledger, request = x.Y } }"));
    assertEquals(0, QueryRoutes.read(ConfigFactory.parseString("fencepost.management.queries {}")).size());
  }
}
