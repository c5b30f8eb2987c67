package io.fencepost.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.Optional;

import io.fencepost.JournalIdentity;
import io.fencepost.PartitionId;
import io.fencepost.annotation.InternalApi;
import io.fencepost.internal.JournalFenceRefusal;

/**
 * INTERNAL API: the fence a journal move leaves in every database it touches, so that a writer the
 * move did not see (a node whose pool held no connection when the move counted sessions, a node behind
 * a connection pooler, a projection, compaction or offset reset started later) cannot write a history
 * where it no longer lives.
 *
 * <p>A trigger on {@code event_journal} and {@code fencepost_projection_offsets} refuses, inside the
 * writer's own transaction, every insert or update of a partition's persistence id
 * ({@code fencepost|group|topic|partition}) that the database's recorded place in the list does not
 * map to it ({@link PartitionId#journalDatabase(int)} against {@code fencepost_journal_identity}),
 * with SQLSTATE {@value JournalFenceRefusal#SQL_STATE}. A move records its target place (marked as
 * moving) before it copies anything, so from then on the histories that leave a database cannot grow
 * there. No write slips between that record and the copy: on PostgreSQL the trigger reads the identity
 * table, whose lock a writer then holds until it commits, and the move takes that table exclusively
 * first (so it waits for writers in flight, and later ones wait for it and read the new place); on H2
 * the trigger locks the identity row, which the move updates. Without an identity row (a single
 * database that never recorded one) the fence allows everything.
 */
@InternalApi
public final class JournalFence {

  private static final String TRIGGER = "fencepost_journal_fence";
  private static final String[] TABLES = {"event_journal", "fencepost_projection_offsets"};

  private JournalFence() {
  }

  /** Installs the fence on this database's journal and projection positions (idempotent; DDL: run it autocommit). */
  public static void install(Connection c) throws SQLException {
    boolean postgres = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
    if (postgres) {
      try (Statement st = c.createStatement()) {
        st.execute(POSTGRES_HASH);
        st.execute(POSTGRES_FENCE);
      }
    }
    for (String table : TABLES) {
      if (!SqlScripts.tableExists(c, table) || installed(c, postgres, table)) {
        continue;
      }
      try (Statement st = c.createStatement()) {
        st.execute(postgres
            ? "CREATE TRIGGER " + TRIGGER + " BEFORE INSERT OR UPDATE ON " + table
                + " FOR EACH ROW EXECUTE FUNCTION fencepost_journal_fence()"
            : "CREATE TRIGGER IF NOT EXISTS " + triggerName(table) + " BEFORE INSERT, UPDATE ON " + table
                + " FOR EACH ROW CALL '" + H2JournalFence.class.getName() + "'");
      }
    }
  }

  /** The fence's refusal of a write of {@code persistenceId} anywhere in {@code failure}, if it is one. */
  public static Optional<String> refusalIn(Throwable failure, String persistenceId) {
    return JournalFenceRefusal.in(failure, persistenceId);
  }

  private static boolean installed(Connection c, boolean postgres, String table) throws SQLException {
    if (!postgres) {
      return false;   // CREATE TRIGGER IF NOT EXISTS
    }
    try (PreparedStatement st = c.prepareStatement("SELECT 1 FROM pg_trigger t JOIN pg_class r ON t.tgrelid = r.oid "
        + "WHERE t.tgname = ? AND r.relname = ? AND pg_table_is_visible(r.oid)")) {
      st.setString(1, TRIGGER);
      st.setString(2, table);
      try (ResultSet rs = st.executeQuery()) {
        return rs.next();
      }
    }
  }

  private static String triggerName(String table) {
    return TRIGGER + "_" + table;
  }

  /**
   * Why a write of {@code persistenceId} is refused by a database that records {@code identity}, or
   * empty when it is allowed (not a partition's history, or one that lives there).
   */
  static Optional<String> refusal(String persistenceId, JournalIdentity identity) {
    Optional<PartitionId> partition = HistoryRows.parse(persistenceId);
    if (partition.isEmpty()) {
      return Optional.empty();
    }
    int home = partition.get().journalDatabase(identity.count());
    if (home == identity.index()) {
      return Optional.empty();
    }
    return Optional.of(message(persistenceId, home, identity.count(), identity.deployment(), identity.index()));
  }

  /** The refusal's text; the PostgreSQL trigger builds the same. */
  static String message(String persistenceId, int home, int count, String deployment, int index) {
    return "journal fence: [" + persistenceId + "] belongs to database " + home + " of " + count + " of deployment ["
        + deployment + "] since a journal move, not to this database (" + index + " of " + count + "); the "
        + "writer uses an old list of journal databases: stop it and start it with the list the databases record";
  }

  /**
   * Java's {@code String.hashCode} (over UTF-16 code units, with 32-bit wrap-around), so that the
   * database maps a partition to the same place as {@link PartitionId#journalDatabase(int)}.
   */
  private static final String POSTGRES_HASH = """
      CREATE OR REPLACE FUNCTION fencepost_java_hash(s text) RETURNS integer
      LANGUAGE plpgsql IMMUTABLE STRICT AS $$
      DECLARE
        h bigint := 0;
        cp integer;
      BEGIN
        FOR i IN 1 .. char_length(s) LOOP
          cp := ascii(substr(s, i, 1));
          IF cp > 65535 THEN
            h := (h * 31 + 55296 + ((cp - 65536) >> 10)) % 4294967296;
            h := (h * 31 + 56320 + ((cp - 65536) & 1023)) % 4294967296;
          ELSE
            h := (h * 31 + cp) % 4294967296;
          END IF;
        END LOOP;
        IF h >= 2147483648 THEN
          h := h - 4294967296;
        END IF;
        RETURN h::integer;
      END $$""";

  private static final String POSTGRES_FENCE = """
      CREATE OR REPLACE FUNCTION fencepost_journal_fence() RETURNS trigger
      LANGUAGE plpgsql AS $$
      DECLARE
        qualified text;
        idx integer;
        cnt integer;
        dep text;
        home integer;
      BEGIN
        IF NEW.persistence_id NOT LIKE 'fencepost|%' THEN
          RETURN NEW;
        END IF;
        qualified := substr(NEW.persistence_id, 11);
        IF qualified !~ '^[^|]+[|][^|]+[|][0-9]+$' THEN
          RETURN NEW;
        END IF;
        SELECT database_index, database_count, deployment INTO idx, cnt, dep
          FROM fencepost_journal_identity WHERE singleton = 0;
        IF NOT FOUND THEN
          RETURN NEW;
        END IF;
        home := ((fencepost_java_hash(qualified) % cnt) + cnt) % cnt;
        IF home <> idx THEN
          RAISE EXCEPTION USING ERRCODE = 'FP001', MESSAGE = 'journal fence: [' || NEW.persistence_id
            || '] belongs to database ' || home || ' of ' || cnt || ' of deployment [' || dep
            || '] since a journal move, not to this database (' || idx || ' of ' || cnt || '); the writer uses '
            || 'an old list of journal databases: stop it and start it with the list the databases record';
        END IF;
        RETURN NEW;
      END $$""";
}
