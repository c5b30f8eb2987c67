package io.fencepost.examples;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;

import io.fencepost.jdbc.JdbcProjection;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.jdbc.JournalDatabases;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * The ledger's SQL read model, kept exactly once by a {@link JdbcProjection}:
 * {@code ledger_balances(merchant_id text primary key, balance_cents bigint not null, payments bigint not null)}.
 * Every node may run it; the projection's conditional position makes sure each batch counts once.
 */
public final class LedgerBalances {

  /** Totals over the table. */
  public record Totals(long merchants, long balanceCents, long payments) {
  }

  private LedgerBalances() {
  }

  /** Creates the table if missing. */
  public static void installSchema(JournalDatabase db) {
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE IF NOT EXISTS ledger_balances (merchant_id varchar(255) PRIMARY KEY, "
          + "balance_cents bigint NOT NULL, payments bigint NOT NULL)");
    } catch (SQLException e) {
      throw new IllegalStateException("cannot create ledger_balances on " + db.jdbcUrl() + ": " + e.getMessage(), e);
    }
  }

  /** The projection over the ledger journals of every partition of {@code topic}, partitions added later included. */
  public static JdbcProjection projection(ActorSystem<?> system, JournalDatabase db, String group, String topic) {
    // snippet: read-model
    return JdbcProjection.forTopics(system, "ledger-balances", db, group, List.of(topic), (tx, batch) -> {
      try (PreparedStatement st = tx.prepareStatement("UPDATE ledger_balances SET balance_cents = balance_cents + ?, "
          + "payments = payments + 1 WHERE merchant_id = ?");
          PreparedStatement insert = tx.prepareStatement("INSERT INTO ledger_balances (merchant_id, balance_cents, "
              + "payments) VALUES (?, ?, 1)")) {
        for (Object e : batch.events()) {
          Credited c = (Credited) e;
          st.setLong(1, c.amountCents());
          st.setString(2, c.merchantId());
          if (st.executeUpdate() == 0) {
            insert.setString(1, c.merchantId());
            insert.setLong(2, c.amountCents());
            insert.executeUpdate();
          }
        }
      }
    }).installSchema();
    // end-snippet: read-model
  }

  /**
   * Sums over the table in every journal database (each holds the balances of the partitions whose
   * histories it holds; a merchant's payments are all in one partition).
   */
  public static Totals totals(JournalDatabases journals) {
    long merchants = 0;
    long cents = 0;
    long payments = 0;
    for (JournalDatabase db : journals.databases()) {
      Totals t = totals(db);
      merchants += t.merchants();
      cents += t.balanceCents();
      payments += t.payments();
    }
    return new Totals(merchants, cents, payments);
  }

  /** Sums over the table. */
  public static Totals totals(JournalDatabase db) {
    try (Connection c = db.connect(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*), coalesce(sum(balance_cents), 0), coalesce(sum(payments), 0) "
            + "FROM ledger_balances")) {
      rs.next();
      return new Totals(rs.getLong(1), rs.getLong(2), rs.getLong(3));
    } catch (SQLException e) {
      throw new IllegalStateException("cannot read ledger_balances: " + e.getMessage(), e);
    }
  }
}
