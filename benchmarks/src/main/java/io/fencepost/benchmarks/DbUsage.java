package io.fencepost.benchmarks;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

import io.fencepost.jdbc.JournalDatabase;

/**
 * What a run wrote to its own PostgreSQL database: rows inserted, updated or deleted in its tables
 * ({@code pg_stat_user_tables}), the rows of {@code event_journal} among them, the growth of its
 * tables with their indexes and TOAST ({@code pg_total_relation_size}), and the WAL the server wrote
 * meanwhile ({@code pg_current_wal_lsn}; server-wide, but runs are sequential).
 *
 * @param rowsWritten rows inserted + updated + deleted
 * @param journalRows rows inserted into {@code event_journal}
 * @param relationBytes growth of tables, indexes and TOAST
 * @param walBytes WAL written
 */
record DbUsage(long rowsWritten, long journalRows, long relationBytes, long walBytes) {

  private static final String SQL = "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0), "
      + "coalesce(sum(n_tup_ins) FILTER (WHERE relname = 'event_journal'), 0), "
      + "coalesce(sum(pg_total_relation_size(relid)), 0), "
      + "pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint FROM pg_stat_user_tables";

  /** The database's counters now (before a run). */
  static DbUsage sample(JournalDatabase db) throws SQLException {
    try (Connection c = db.connect(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(SQL)) {
      rs.next();
      return new DbUsage(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4));
    }
  }

  /**
   * The counters after a run, once the statistics collector has caught up (its counters arrive
   * asynchronously, after the writers' connections close): sampled until two reads agree.
   */
  static DbUsage settled(JournalDatabase db) throws SQLException, InterruptedException {
    DbUsage last = sample(db);
    for (int i = 0; i < 20; i++) {
      Thread.sleep(600);
      DbUsage next = sample(db);
      if (next.rowsWritten == last.rowsWritten && next.relationBytes == last.relationBytes) {
        return next;
      }
      last = next;
    }
    return last;
  }

  /** This sample minus an earlier one. */
  DbUsage minus(DbUsage before) {
    return new DbUsage(rowsWritten - before.rowsWritten, journalRows - before.journalRows,
        relationBytes - before.relationBytes, walBytes - before.walBytes);
  }
}
