package io.fencepost;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Base64;
import java.util.List;

import io.fencepost.jdbc.JournalDatabase;

/**
 * A partition's rows of {@code event_journal} and {@code snapshot} as a committed fixture (one row a
 * line, tab-separated, payloads in Base64): written once by the code of a format or a class version,
 * and loaded into a fresh database by the tests that must keep reading it.
 */
final class JournalRows {

  private static final String[] JOURNAL_COLUMNS = {"persistence_id", "sequence_number", "deleted", "writer",
      "write_timestamp", "adapter_manifest", "event_ser_id", "event_ser_manifest", "event_payload"};
  private static final String[] SNAPSHOT_COLUMNS = {"persistence_id", "sequence_number", "created",
      "snapshot_ser_id", "snapshot_ser_manifest", "snapshot_payload"};

  private JournalRows() {
  }

  /** Writes the rows of {@code persistenceId} to {@code file}. */
  static void dump(JournalDatabase db, String persistenceId, Path file) throws SQLException, IOException {
    StringBuilder out = new StringBuilder();
    try (Connection c = db.connect()) {
      dump(c, persistenceId, "event_journal", JOURNAL_COLUMNS, out);
      dump(c, persistenceId, "snapshot", SNAPSHOT_COLUMNS, out);
    }
    Files.writeString(file, out);
  }

  private static void dump(Connection c, String persistenceId, String table, String[] columns, StringBuilder out)
      throws SQLException {
    try (PreparedStatement st = c.prepareStatement("SELECT " + String.join(", ", columns) + " FROM " + table
        + " WHERE persistence_id = ? ORDER BY sequence_number")) {
      st.setString(1, persistenceId);
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          out.append(table);
          for (String column : columns) {
            Object value = rs.getObject(column);
            out.append('\t').append(value instanceof byte[] b ? Base64.getEncoder().encodeToString(b)
                : value == null ? "\\N" : value.toString());
          }
          out.append('\n');
        }
      }
    }
  }

  /** Inserts the rows of the fixture {@code journal-fixtures/<resource>}; the number of rows. */
  static int load(JournalDatabase db, String resource) throws IOException, SQLException {
    List<String> lines;
    try (InputStream in = JournalRows.class.getResourceAsStream("/journal-fixtures/" + resource)) {
      lines = new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList();
    }
    int rows = 0;
    try (Connection c = db.connect()) {
      for (String line : lines) {
        String[] f = line.split("\t", -1);
        boolean journal = f[0].equals("event_journal");
        String[] columns = journal ? JOURNAL_COLUMNS : SNAPSHOT_COLUMNS;
        try (PreparedStatement st = c.prepareStatement("INSERT INTO " + f[0] + " (" + String.join(", ", columns)
            + ") VALUES (" + "?, ".repeat(columns.length - 1) + "?)")) {
          for (int i = 0; i < columns.length; i++) {
            String v = f[i + 1];
            String column = columns[i];
            if (v.equals("\\N")) {
              st.setObject(i + 1, null);
            } else if (column.endsWith("payload")) {
              st.setBytes(i + 1, Base64.getDecoder().decode(v));
            } else if (column.equals("deleted")) {
              st.setBoolean(i + 1, Boolean.parseBoolean(v));
            } else if (column.endsWith("_ser_id")) {
              st.setInt(i + 1, Integer.parseInt(v));
            } else if (column.equals("sequence_number") || column.equals("write_timestamp") || column.equals("created")) {
              st.setLong(i + 1, Long.parseLong(v));
            } else {
              st.setString(i + 1, v);
            }
          }
          rows += st.executeUpdate();
        }
      }
    }
    return rows;
  }
}
