package io.fencepost.jdbc.internal;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.Optional;

import io.fencepost.JournalIdentity;
import io.fencepost.annotation.InternalApi;
import io.fencepost.internal.JournalFenceRefusal;
import org.h2.api.Trigger;

/**
 * INTERNAL API: {@link JournalFence}'s trigger on H2 (H2 runs Java triggers in the process that hosts
 * the database, which has this class whenever Fencepost opened it).
 */
@InternalApi
public final class H2JournalFence implements Trigger {

  private int column = -1;

  @Override
  public void init(Connection conn, String schemaName, String triggerName, String tableName, boolean before, int type)
      throws SQLException {
    try (ResultSet rs = conn.getMetaData().getColumns(null, schemaName, tableName, null)) {
      for (int i = 0; rs.next(); i++) {
        if ("persistence_id".equals(rs.getString("COLUMN_NAME").toLowerCase(Locale.ROOT))) {
          column = i;
        }
      }
    }
    if (column < 0) {
      throw new SQLException("the journal fence found no persistence_id column in " + tableName);
    }
  }

  @Override
  public void fire(Connection conn, Object[] oldRow, Object[] newRow) throws SQLException {
    if (newRow == null || !(newRow[column] instanceof String rowId) || !rowId.startsWith("fencepost")) {
      return;
    }
    Optional<JournalIdentity> identity;
    boolean moveSession;
    try (Statement st = conn.createStatement()) {
      try (ResultSet rs = st.executeQuery("SELECT deployment, database_index, database_count, moving FROM "
          + JournalIdentities.TABLE + " WHERE singleton = 0")) {
        identity = rs.next()
            ? Optional.of(new JournalIdentity(rs.getString(1), rs.getInt(2), rs.getInt(3), rs.getInt(4) != 0))
            : Optional.empty();
      }
      try (ResultSet rs = st.executeQuery("SELECT @fencepost_journal_move")) {
        moveSession = rs.next() && rs.getObject(1) != null;
      }
    }
    Optional<String> refused = identity.flatMap(id -> JournalFence.refusal(rowId, id, moveSession));
    if (refused.isPresent()) {
      throw new SQLException(refused.get(), JournalFenceRefusal.SQL_STATE);
    }
  }
}
