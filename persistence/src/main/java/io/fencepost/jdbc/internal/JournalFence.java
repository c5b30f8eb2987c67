package io.fencepost.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

import io.fencepost.JournalIdentity;
import io.fencepost.PartitionId;
import io.fencepost.annotation.InternalApi;
import io.fencepost.errors.JournalLayoutException;
import io.fencepost.internal.JournalFenceRefusal;

/**
 * INTERNAL API: the fence a journal move leaves in every database it touches, so that a writer the
 * move did not see (a node whose pool held no connection when the move counted sessions, a node behind
 * a connection pooler, a projection, compaction or offset reset started later) cannot write a history
 * where it no longer lives.
 *
 * <p>A trigger on the journal, the snapshots (and window segments), the relay positions and the
 * projections' positions refuses, inside the writer's own transaction, every insert or update of a
 * partition's rows ({@code fencepost|group|topic|partition}, also behind {@code fencepost-window|} or
 * {@code fencepost-outbox|}) that the database's recorded place in the list does not map to it
 * ({@link PartitionId#journalDatabase(int)} against {@code fencepost_journal_identity}), and, while a
 * move is marked there, every such write but the move's own; with SQLSTATE
 * {@value JournalFenceRefusal#SQL_STATE} and a message naming the persistence id. A move marks a
 * database before it copies anything from it, so from then on its histories cannot grow there. On
 * PostgreSQL no write slips between the mark and the copy: the trigger reads the identity table, whose
 * lock a writer then holds until it commits, and the move takes that table exclusively first (so it
 * waits for writers in flight, and later ones wait for it and read the mark). On H2 the trigger reads
 * without a lock (a lock would serialise every write of the database for good); there a writer in
 * flight across the mark is one the move's second session count sees. Without an identity row (a
 * single database that never recorded one) the fence allows everything.
 */
@InternalApi
public final class JournalFence {

  private static final String TRIGGER = "fencepost_journal_fence";
  /** The fenced tables: journal, snapshots and window segments, relay positions, projection positions. */
  static final List<String> TABLES =
      List.of("event_journal", "snapshot", "durable_state", ProjectionTables.OFFSETS);
  /** How long the move waits for a table lock on PostgreSQL before it gives up (changing nothing). */
  private static final String LOCK_TIMEOUT = "10s";

  private JournalFence() {
  }

  /**
   * Makes {@code c} the move's own session: the fence lets its writes through while the move is
   * marked, and (PostgreSQL) its lock waits end after {@value #LOCK_TIMEOUT} instead of queueing every
   * writer behind them.
   */
  public static void enterMove(Connection c) throws SQLException {
    try (Statement st = c.createStatement()) {
      if (postgres(c)) {
        st.execute("SET fencepost.journal_move = 'on'");
        st.execute("SET lock_timeout = '" + LOCK_TIMEOUT + "'");
      } else {
        st.execute("SET @fencepost_journal_move = 1");
      }
    }
  }

  /**
   * Refuses a move the fence could not keep: PostgreSQL's copy of Java's {@code String.hashCode} reads
   * characters as code points, which only a UTF8 database gives; it is checked against Java for every
   * partition the move knows.
   */
  public static void checkHash(Connection c, String url, Collection<PartitionId> partitions) throws SQLException {
    if (!postgres(c)) {
      return;
    }
    String encoding;
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SHOW server_encoding")) {
      rs.next();
      encoding = rs.getString(1);
    }
    if (!"UTF8".equalsIgnoreCase(encoding)) {
      throw new JournalLayoutException("refused to move histories: database " + url + " has server_encoding "
          + encoding + ", and the journal fence a move leaves maps partitions to databases by their names' "
          + "characters, which only a UTF8 database gives; nothing was changed");
    }
    try (PreparedStatement st = c.prepareStatement("SELECT fencepost_java_hash(?)")) {
      for (PartitionId p : partitions) {
        st.setString(1, p.qualifiedName());
        try (ResultSet rs = st.executeQuery()) {
          rs.next();
          if (rs.getInt(1) != p.qualifiedName().hashCode()) {
            throw new JournalLayoutException("refused to move histories: database " + url + " maps partition ["
                + p.qualifiedName() + "] differently from Java (hash " + rs.getInt(1) + ", not "
                + p.qualifiedName().hashCode() + "); nothing was changed");
          }
        }
      }
    }
  }

  /** Installs the fence on this database's fenced tables (idempotent; DDL: run it in autocommit mode). */
  public static void install(Connection c) throws SQLException {
    boolean postgres = postgres(c);
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
            : "CREATE TRIGGER IF NOT EXISTS " + TRIGGER + "_" + table + " BEFORE INSERT, UPDATE ON " + table
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

  static boolean postgres(Connection c) throws SQLException {
    return c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
  }

  /**
   * Why a write of the rows under {@code rowId} is refused by a database that records
   * {@code identity}, or empty when it is allowed (not a partition's rows, the move's own write, or
   * rows of a history that lives there while no move is marked).
   */
  static Optional<String> refusal(String rowId, JournalIdentity identity, boolean moveSession) {
    String persistenceId = rowId;
    for (String prefix : List.of("fencepost-window|", "fencepost-outbox|")) {
      if (rowId.startsWith(prefix)) {
        persistenceId = rowId.substring(prefix.length());
      }
    }
    Optional<PartitionId> partition = HistoryRows.parse(persistenceId);
    if (partition.isEmpty() || moveSession) {
      return Optional.empty();
    }
    if (identity.moving()) {
      return Optional.of(movingMessage(persistenceId, identity.deployment(), identity.index(), identity.count()));
    }
    int home = partition.get().journalDatabase(identity.count());
    if (home == identity.index()) {
      return Optional.empty();
    }
    return Optional.of(message(persistenceId, home, identity.count(), identity.deployment(), identity.index()));
  }

  /** The refusal's text for a settled database; the PostgreSQL trigger builds the same. */
  static String message(String persistenceId, int home, int count, String deployment, int index) {
    return "journal fence: [" + persistenceId + "] belongs to database " + home + " of " + count + " of deployment ["
        + deployment + "] since a journal move, not to this database (" + index + " of " + count + "); the "
        + "writer uses an old list of journal databases: stop it and start it with the list the databases record";
  }

  /** The refusal's text while a move is marked; the PostgreSQL trigger builds the same. */
  static String movingMessage(String persistenceId, String deployment, int index, int count) {
    return "journal fence: [" + persistenceId + "] is not written while a journal move of deployment [" + deployment
        + "] is under way in this database (database " + index + " of " + count + " once it ends); the writer "
        + "started before the move: stop it, finish the move, and start it with the list the databases record";
  }

  /**
   * Java's {@code String.hashCode} (over UTF-16 code units, with 32-bit wrap-around), so that the
   * database maps a partition to the same place as {@link PartitionId#journalDatabase(int)}; needs a
   * UTF8 database ({@link #checkHash}).
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
      LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      DECLARE
        pid text := NEW.persistence_id;
        qualified text;
        idx integer;
        cnt integer;
        mov integer;
        dep text;
        home integer;
      BEGIN
        IF pid LIKE 'fencepost-window|%' OR pid LIKE 'fencepost-outbox|%' THEN
          pid := substr(pid, 18);
        END IF;
        IF pid NOT LIKE 'fencepost|%' THEN
          RETURN NEW;
        END IF;
        qualified := substr(pid, 11);
        IF qualified !~ '^[^|]+[|][^|]+[|][0-9]+$' OR current_setting('fencepost.journal_move', true) = 'on' THEN
          RETURN NEW;
        END IF;
        SELECT database_index, database_count, moving, deployment INTO idx, cnt, mov, dep
          FROM fencepost_journal_identity WHERE singleton = 0;
        IF NOT FOUND THEN
          RETURN NEW;
        END IF;
        IF mov <> 0 THEN
          RAISE EXCEPTION USING ERRCODE = 'FP001', MESSAGE = 'journal fence: [' || pid || '] is not written while '
            || 'a journal move of deployment [' || dep || '] is under way in this database (database ' || idx
            || ' of ' || cnt || ' once it ends); the writer started before the move: stop it, finish the move, and '
            || 'start it with the list the databases record';
        END IF;
        home := ((fencepost_java_hash(qualified) % cnt) + cnt) % cnt;
        IF home <> idx THEN
          RAISE EXCEPTION USING ERRCODE = 'FP001', MESSAGE = 'journal fence: [' || pid || '] belongs to database '
            || home || ' of ' || cnt || ' of deployment [' || dep || '] since a journal move, not to this database ('
            || idx || ' of ' || cnt || '); the writer uses an old list of journal databases: stop it and start it '
            || 'with the list the databases record';
        END IF;
        RETURN NEW;
      END $$""";
}
