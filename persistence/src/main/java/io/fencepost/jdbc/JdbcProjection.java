package io.fencepost.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.fencepost.AppliedBatch;
import io.fencepost.FencepostMeters;
import io.fencepost.PartitionId;
import io.fencepost.Readiness;
import io.fencepost.jdbc.internal.JournalFence;
import io.fencepost.jdbc.internal.JournalIds;
import io.fencepost.jdbc.internal.PluginChecks;
import io.fencepost.jdbc.internal.ProjectionFailures;
import io.fencepost.jdbc.internal.ProjectionTables;
import io.fencepost.jdbc.internal.SqlScripts;
import io.fencepost.errors.JournalGapException;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.EventEnvelope;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.apache.pekko.stream.javadsl.Sink;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A SQL read model kept exactly once: each journaled batch is applied to the user's tables and the
 * projection's position advanced <em>in the same database transaction</em>, and the advance is
 * conditional on the position read before ({@code UPDATE ... WHERE seq = expected}), so two
 * instances of one projection can run at once and never both apply a batch.
 *
 * <pre>{@code
 * JdbcProjection balances = JdbcProjection.forTopics(system, "balances", journalDb, "ledger", List.of("payments"),
 *     (tx, batch) -> { for (Object e : batch.events()) credit(tx, (Credited) e); });
 * balances.installSchema();
 * balances.start(Duration.ofMillis(500));
 * }</pre>
 *
 * <p>{@link #forTopics} follows every partition of the topics, partitions added to a topic later
 * included: each run looks for partition journals that appeared since (one walk over the journal
 * table's primary-key index), so a partition's batches are projected from its first journaled
 * batch on. {@link #create} reads a fixed list of journals.
 *
 * <p>Each run takes every journal in turn and applies at most {@value #CHUNK} of its batches, in one
 * transaction, before it looks at the next: a journal with a backlog cannot starve the others, and
 * a run that left a backlog is followed at once by the next (not after the interval). On PostgreSQL,
 * each transaction first takes a transaction-scoped advisory lock on (projection, journal) with
 * {@code pg_try_advisory_xact_lock}: an instance that finds it taken skips that journal for this
 * run, so the instances on several nodes spread the journals between them instead of doing the same
 * work and losing the position race.
 *
 * <p>The read model must live in the journal's database (same transaction). A handler that throws
 * rolls back its transaction; the journal is then taken one batch per transaction until the failing
 * batch has been applied, so that the batches before it are kept. Not a pekko-projection:
 * pekko-projection 1.0 modules were not used: this small equivalent was quicker to make exact on
 * this stack.
 */
public final class JdbcProjection implements AutoCloseable {

  /** Applies one journaled batch to the read model, inside the transaction it is given. */
  @FunctionalInterface
  public interface Handler {
    void apply(Connection transaction, AppliedBatch batch) throws SQLException;
  }

  private static final Logger log = LoggerFactory.getLogger(JdbcProjection.class);
  /** Batches applied per journal per run, in one transaction. */
  private static final int CHUNK = 200;
  /** How long a journal may keep failing before it is reported at ERROR and makes the node not ready. */
  public static final Duration DEFAULT_ERROR_AFTER = Duration.ofSeconds(30);
  /** Journals are looked for at most this often while runs follow each other without a pause. */
  private static final long DISCOVER_EVERY_NANOS = TimeUnit.SECONDS.toNanos(1);
  private static final long LAG_EVERY_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final ActorSystem<?> system;
  private final String name;
  private final JournalDatabase db;
  /** The journals to read, fixed ({@link #create}) or discovered anew each run ({@link #forTopics}). */
  private final Supplier<List<String>> sources;
  /** The journals read so far: registered (position 0 stored) before their first run. */
  private final Set<String> known = ConcurrentHashMap.newKeySet();
  /**
   * {@link #forTopics}: one row per topic ({@code fencepost|group|topic|}, position 0), so that
   * {@code JournalCompaction} holds back for this projection on partitions it has not found yet.
   */
  private final List<String> topicRows;
  private volatile boolean topicRowsRegistered;
  private final Handler handler;
  private ScheduledExecutorService scheduler;
  /** Persistence ids stopped at a journal gap (logged once each). */
  private final Set<String> gaps = ConcurrentHashMap.newKeySet();
  /**
   * Persistence ids whose history a journal move took to another database: the database's fence
   * refuses this projection's position there, for good (logged once each at ERROR, then skipped).
   */
  private final Set<String> movedAway = ConcurrentHashMap.newKeySet();
  /** Persistence ids whose last transaction failed: taken one batch per transaction until it passes. */
  private final Set<String> isolating = ConcurrentHashMap.newKeySet();
  private List<String> lastSources = List.of();
  private long discoveredAtNanos;
  /** Where the next run starts in the list of journals (a different place each run and each instance). */
  private int nextStart = ThreadLocalRandom.current().nextInt(1 << 16);
  private volatile boolean behind;
  /** The last catchUp found the journal's advisory lock held by another instance and did nothing. */
  private boolean skippedByLock;
  private long lagMeasuredNanos;
  private volatile boolean closed;
  /** The projection's own connection (runs are serial), opened on first use and after a failure. */
  private volatile Connection connection;
  /** The journals it fails on: retried with a backoff, reported at ERROR after {@link #DEFAULT_ERROR_AFTER}. */
  private final ProjectionFailures failures;
  private AutoCloseable readiness;

  private JdbcProjection(ActorSystem<?> system, String name, JournalDatabase db, Supplier<List<String>> sources,
      List<String> topicRows, Handler handler) {
    this.topicRows = List.copyOf(topicRows);
    this.system = Objects.requireNonNull(system, "system");
    this.name = Objects.requireNonNull(name, "name");
    this.db = Objects.requireNonNull(db, "db");
    this.sources = sources;
    this.handler = Objects.requireNonNull(handler, "handler");
    db.requirePlaced(system, "projection [" + name + "]");
    PluginChecks.requireOn(system.settings().config(), "projection [" + name + "]", db.jdbcUrl(),
        List.of(db.readJournalPluginId()), List.of("read-journal"));
    this.failures = new ProjectionFailures(name, db.jdbcUrl(), DEFAULT_ERROR_AFTER);
  }

  /**
   * How long applying a journal's next batch may keep failing (each failure retried after a backoff of
   * 0.5 s doubling to 30 s) before it is logged at ERROR (then once a minute), counted in the gauge
   * {@code fencepost.projection.failing} and, once {@link #start started}, makes {@code /ready} fail
   * naming it; 30 s by default.
   */
  public JdbcProjection withErrorAfter(Duration errorAfter) {
    if (errorAfter.isNegative() || errorAfter.isZero()) {
      throw new IllegalArgumentException("projection [" + name + "]: errorAfter must be > 0, was " + errorAfter);
    }
    failures.errorAfter(errorAfter);
    return this;
  }

  /**
   * A projection named {@code name} over the journals of {@code persistenceIds} (e.g. every
   * {@code PartitionId.persistenceId()} of a pipeline).
   */
  public static JdbcProjection create(ActorSystem<?> system, String name, JournalDatabase db,
      List<String> persistenceIds, Handler handler) {
    List<String> fixed = List.copyOf(persistenceIds);
    return new JdbcProjection(system, name, db, () -> fixed, List.of(), handler);
  }

  /**
   * A projection named {@code name} over every partition of {@code topics} that consumer group
   * {@code group} journaled, partitions added to the topics later included: each run first looks for
   * partition journals that appeared since the last one.
   */
  public static JdbcProjection forTopics(ActorSystem<?> system, String name, JournalDatabase db, String group,
      List<String> topics, Handler handler) {
    Objects.requireNonNull(group, "group");
    if (topics.isEmpty()) {
      throw new IllegalArgumentException("projection [" + name + "]: topics must name at least one topic");
    }
    List<String> prefixes = topics.stream()
        .map(t -> new PartitionId(group, t, 0).persistenceId())
        .map(pid -> pid.substring(0, pid.lastIndexOf('|') + 1))
        .toList();
    return new JdbcProjection(system, name, db, () -> journalsWithPrefixes(db, prefixes), prefixes, handler);
  }

  private static List<String> journalsWithPrefixes(JournalDatabase db, List<String> prefixes) {
    try (Connection c = db.connect()) {
      return JournalIds.withPrefixes(c, db.dialect() == Dialect.POSTGRES, prefixes);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot list the journals in event_journal on " + db.jdbcUrl() + ": "
          + e.getMessage(), e);
    }
  }

  /** Creates the positions table if it is missing. */
  public JdbcProjection installSchema() {
    try (Connection c = db.connect()) {
      SqlScripts.createTable(c, "fencepost_projection_offsets", ProjectionTables.CREATE_OFFSETS);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot create fencepost_projection_offsets on " + db.jdbcUrl() + ": "
          + e.getMessage(), e);
    }
    persistenceIds();
    return this;
  }

  /** The journals to read now; a journal seen for the first time is registered first. */
  private List<String> persistenceIds() {
    if (!topicRowsRegistered) {
      register(topicRows);
      topicRowsRegistered = true;
    }
    if (System.nanoTime() - discoveredAtNanos < DISCOVER_EVERY_NANOS && !lastSources.isEmpty()) {
      return lastSources;
    }
    List<String> now = sources.get();
    lastSources = now;
    discoveredAtNanos = System.nanoTime();
    List<String> fresh = now.stream().filter(pid -> !known.contains(pid)).toList();
    if (!fresh.isEmpty()) {
      register(fresh);
      if (!known.isEmpty()) {
        log.info("[{}] projection follows {} new journal(s): {}", name, fresh.size(), fresh);
      }
      known.addAll(fresh);
    }
    return now;
  }

  /**
   * Stores position 0 for every persistence id that has none yet, so that {@code JournalCompaction}
   * sees this projection before its first batch and never compacts what it has not read.
   */
  private void register(List<String> persistenceIds) {
    try (Connection c = db.connect(); PreparedStatement st = c.prepareStatement("INSERT INTO "
        + "fencepost_projection_offsets (projection, persistence_id, seq) SELECT ?, ?, 0 WHERE NOT EXISTS "
        + "(SELECT 1 FROM fencepost_projection_offsets WHERE projection = ? AND persistence_id = ?)")) {
      for (String pid : persistenceIds) {
        st.setString(1, name);
        st.setString(2, pid);
        st.setString(3, name);
        st.setString(4, pid);
        try {
          st.executeUpdate();
        } catch (SQLException e) {
          if (movedAway(pid, e)) {
            continue;
          }
          if (e.getSQLState() == null || !e.getSQLState().startsWith("23")) {
            throw e;   // 23...: another instance registered it at the same time
          }
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot register projection [" + name + "] on " + db.jdbcUrl() + ": "
          + e.getMessage(), e);
    }
  }

  /** The journal sequence number this projection has applied up to, for one persistence id (0: none). */
  public long position(String persistenceId) {
    try (Connection c = db.connect()) {
      return position(c, persistenceId);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot read the position of projection [" + name + "]: " + e.getMessage(), e);
    }
  }

  /**
   * Applies up to {@value #CHUNK} batches journaled since its stored position to each journal, in
   * one transaction per journal (one per batch while a failed batch is retried). Returns how many
   * batches this call applied; a batch another instance applied first is skipped.
   */
  public synchronized int runOnce() {
    return run(false);
  }

  /** One run; {@code paced}: journals that failed wait out their backoff (the scheduled runs). */
  private int run(boolean paced) {
    int applied = 0;
    boolean full = false;
    RuntimeException first = null;
    if (paced && (failures.waiting(ProjectionFailures.DISCOVERY) || failures.waiting(ProjectionFailures.DATABASE))) {
      behind = false;
      return 0;   // the database failed: the next attempt waits out its backoff
    }
    List<String> pids;
    try {
      pids = persistenceIds();
      failures.passed(ProjectionFailures.DISCOVERY);
    } catch (RuntimeException e) {
      behind = false;
      failures.failed(ProjectionFailures.DISCOVERY, e, false);
      throw e;
    }
    failures.retainOnly(pids);   // a journal no longer listed (moved to another database) is not failing here
    int start = pids.isEmpty() ? 0 : Math.floorMod(nextStart++, pids.size());
    for (int i = 0; i < pids.size() && !closed; i++) {
      String pid = pids.get((start + i) % pids.size());
      if (movedAway.contains(pid) || (paced && failures.waiting(pid))) {
        continue;
      }
      try {
        skippedByLock = false;
        int n = catchUp(pid);
        failures.passed(ProjectionFailures.DATABASE);
        if (movedAway.contains(pid)) {
          failures.forget(pid);   // stopped for good here, said once at ERROR
        } else if (!skippedByLock) {   // (another instance holding the journal says nothing of this one's batch)
          failures.passed(pid);
        }
        applied += n;
        full |= n >= CHUNK;
      } catch (RuntimeException e) {
        if (e instanceof Unreachable) {
          failures.failed(ProjectionFailures.DATABASE, e, false);   // the database, not this journal
        } else {
          failures.failed(pid, e, e instanceof JournalGapException);
        }
        // One failing journal must not hold the others back. A failure other than a gap (logged once
        // already) is the one thrown, so that it is not hidden behind the gap.
        if (first == null) {
          first = e;
        } else if (first instanceof JournalGapException && !(e instanceof JournalGapException)) {
          e.addSuppressed(first);
          first = e;
        } else {
          first.addSuppressed(e);
        }
        if (e instanceof Unreachable) {
          break;   // every other journal would wait for the same connect timeout
        }
      }
    }
    behind = full;
    if (paced && !closed) {
      measureLag();
    }
    if (first != null) {
      throw first;
    }
    return applied;
  }

  /**
   * At most once a second: the journal entries of the journals this projection registered that it has
   * yet to apply ({@code fencepost.projection.lag}). A failure to measure keeps the last value.
   */
  private void measureLag() {
    long now = System.nanoTime();
    if (now - lagMeasuredNanos < LAG_EVERY_NANOS) {
      return;
    }
    lagMeasuredNanos = now;
    try {
      Connection c = connection();
      try (PreparedStatement st = c.prepareStatement("SELECT COALESCE(SUM(GREATEST(0, (SELECT MAX(j.sequence_number) "
          + "FROM event_journal j WHERE j.persistence_id = o.persistence_id) - o.seq)), 0) "
          + "FROM fencepost_projection_offsets o WHERE o.projection = ?")) {
        st.setString(1, name);
        try (ResultSet rs = st.executeQuery()) {
          rs.next();
          failures.lag(rs.getLong(1));
        }
      } finally {
        c.rollback();
      }
    } catch (SQLException e) {
      log.debug("[{}] measuring the projection's lag failed: {}", name, e.toString());
    }
  }

  /** Runs {@link #runOnce()} every {@code interval} on a thread of its own until {@link #close()}. */
  public synchronized JdbcProjection start(Duration interval) {
    if (closed) {
      throw new IllegalStateException("projection [" + name + "] was closed: create another to start it again");
    }
    if (scheduler == null) {
      persistenceIds();
      failures.registerMeters(FencepostMeters.get(system).registryForNewMeter());
      readiness = Readiness.get(system).register("projection [" + name + "]", failures::notReady);
      scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "fencepost-projection-" + name);
        t.setDaemon(true);
        return t;
      });
      scheduler.scheduleWithFixedDelay(() -> {
        do {   // while a journal has a backlog, the next run follows at once, whatever failed in this one
          try {
            synchronized (this) {
              run(true);
            }
          } catch (RuntimeException e) {
            // Logged per journal by the failures (WARN, then ERROR after errorAfter); retried after a backoff.
            log.debug("[{}] projection run failed: {}", name, e.toString());
          } catch (Throwable e) {   // the schedule must survive anything: a thrown Error would end it silently
            behind = false;
            log.error("[{}] projection run failed, retrying in {} ms: {}", name, interval.toMillis(), e.toString(), e);
          }
        } while (behind && !closed);
      }, 0, interval.toMillis(), TimeUnit.MILLISECONDS);
    }
    return this;
  }

  @Override
  public void close() {
    closed = true;
    ScheduledExecutorService running;
    synchronized (this) {
      running = scheduler;
      scheduler = null;
      if (readiness != null) {
        try {
          readiness.close();
        } catch (Exception e) {
          log.debug("[{}] leaving the readiness registry: {}", name, e.toString());
        }
        readiness = null;
      }
      failures.close();
    }
    if (running != null) {
      running.shutdownNow();
      try {
        if (!running.awaitTermination(30, TimeUnit.SECONDS)) {
          Connection stuck = connection;   // a statement with no socket timeout: cut it off
          if (stuck != null) {
            stuck.abort(Runnable::run);
          }
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (SQLException e) {
        log.debug("[{}] aborting the projection's connection: {}", name, e.toString());
      }
    }
    synchronized (this) {
      closeConnection();
    }
  }

  private void closeConnection() {
    if (connection != null) {
      try {
        connection.close();
      } catch (SQLException e) {
        log.debug("[{}] closing the projection's connection: {}", name, e.toString());
      }
      connection = null;
    }
  }

  /** The projection's connection, in manual-commit mode; a broken one is replaced. */
  private Connection connection() throws SQLException {
    if (connection != null && !connection.isValid(5)) {
      closeConnection();
    }
    if (connection == null) {
      Connection fresh = db.connect();
      try {
        fresh.setAutoCommit(false);
      } catch (SQLException e) {
        fresh.close();
        throw e;
      }
      connection = fresh;
    }
    return connection;
  }

  /** One transaction of up to {@value #CHUNK} batches of one journal; returns how many it applied. */
  private int catchUp(String pid) {
    JdbcReadJournal journal = PersistenceQuery.get(system)
        .getReadJournalFor(JdbcReadJournal.class, db.readJournalPluginId());
    Connection c;
    try {
      c = connection();
    } catch (SQLException e) {
      throw new Unreachable("[" + name + "] cannot reach " + db.jdbcUrl() + ": " + e.getMessage(), e);
    }
    try {
      return project(c, journal, pid);
    } catch (SQLException e) {
      abandon(c, e);
      if (movedAway(pid, e)) {
        return 0;
      }
      throw new IllegalStateException("[" + name + "] journal [" + pid + "] not projected (tried again): "
          + e.getMessage(), e);
    } catch (RuntimeException | Error e) {
      abandon(c, e);
      if (movedAway(pid, e)) {
        return 0;
      }
      throw e;
    }
  }

  /**
   * Whether {@code failure} is this database's journal fence refusing {@code pid}'s position: a move
   * is under way, or the history moved to another database, whose projection goes on from the position
   * the move copied. This one stops projecting it until it is restarted (rolled back: nothing of the
   * batch counted here), saying so once.
   */
  private boolean movedAway(String pid, Throwable failure) {
    String refusal = JournalFence.refusalIn(failure, pid).orElse(null);
    if (refusal == null) {
      return false;
    }
    if (movedAway.add(pid)) {
      log.error("[{}] projection stopped for [{}] on {}: {}. Nothing of the refused batch counted here. Restart "
          + "this projection once the move ended, on the database the deployment's list now maps the history to "
          + "(whose projection goes on from the position the move copied)", name, pid, db.jdbcUrl(), refusal);
    }
    return true;
  }

  /** The database cannot be reached: the rest of the run would only wait for the same timeout. */
  private static final class Unreachable extends IllegalStateException {
    Unreachable(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * A failure left the transaction in an unknown state: rolled back and the connection closed, so
   * that no later run can go on in it (and its advisory lock goes with it).
   */
  private void abandon(Connection c, Throwable cause) {
    try {
      c.rollback();
    } catch (SQLException | RuntimeException rollbackFailure) {
      cause.addSuppressed(rollbackFailure);
    }
    closeConnection();
  }

  private int project(Connection c, JdbcReadJournal journal, String pid) throws SQLException {
    boolean one = isolating.contains(pid);
    if (!lock(c, pid)) {
      skippedByLock = true;
      c.rollback();
      return 0;   // another instance works on this journal now
    }
    long from = position(c, pid);
    List<EventEnvelope> envelopes;
    try {
      // Open-ended and limited, not a window: the first entry read shows a hole right after the position.
      envelopes = journal.currentEventsByPersistenceId(pid, from + 1, Long.MAX_VALUE).take(CHUNK)
          .runWith(Sink.seq(), system).toCompletableFuture().get(60, TimeUnit.SECONDS);
    } catch (Exception e) {
      c.rollback();
      throw new IllegalStateException("[" + name + "] cannot read the journal of [" + pid + "]: " + e, e);
    }
    if (envelopes.isEmpty()) {
      c.rollback();
      return 0;
    }
    int unbroken = 0;
    while (unbroken < envelopes.size() && envelopes.get(unbroken).sequenceNr() == from + 1 + unbroken) {
      unbroken++;
    }
    if (unbroken > 0) {
      envelopes = envelopes.subList(0, unbroken);   // a hole further on is reported once it is next
    }
    try {
      JournalGapException.check("projection " + name, pid, from + 1,
          envelopes.stream().map(EventEnvelope::sequenceNr).toList(),
          last -> "set this projection's position to " + last + " (table fencepost_projection_offsets, projection ["
              + name + "], persistence_id [" + pid + "]); their read-model updates are then never applied");
    } catch (JournalGapException gap) {
      c.rollback();
      if (position(pid) != from) {
        return 0;   // another instance moved on meanwhile (compaction may have removed what it passed)
      }
      if (gaps.add(pid)) {
        log.error("[{}] projection stopped for [{}]: {}", name, pid, gap.getMessage());
      }
      throw gap;
    }
    // One transaction for the chunk; one per batch while a failed batch is looked for.
    List<List<EventEnvelope>> transactions = one
        ? envelopes.stream().map(List::of).toList() : List.of(envelopes);
    long expected = from;
    int applied = 0;
    for (List<EventEnvelope> tx : transactions) {
      if (applied > 0 && !lock(c, pid)) {
        c.rollback();
        return applied;   // the lock went with the last commit, and another instance took it
      }
      EventEnvelope current = null;
      try {
        for (EventEnvelope env : tx) {
          current = env;
          AppliedBatch batch = AppliedBatch.from(env.event()).orElse(null);
          if (batch != null) {
            handler.apply(c, batch);
          }
        }
      } catch (SQLException | RuntimeException | LinkageError | AssertionError e) {   // catchUp rolls back, drops the connection
        if (tx.size() > 1) {
          isolating.add(pid);   // the next run finds the failing batch, keeping those before it
        }
        throw new IllegalStateException("[" + name + "] batch " + pid + "#" + current.sequenceNr()
            + " was rolled back" + (tx.size() > 1 ? " with the " + (tx.size() - 1) + " other(s) of its transaction" : "")
            + " (it is tried again): " + e.getMessage(), e);
      }
      long last = tx.get(tx.size() - 1).sequenceNr();
      if (!advance(c, pid, expected, last)) {
        c.rollback();
        return applied;   // another instance moved on: re-read the position next run
      }
      c.commit();
      expected = last;
      applied += tx.size();
      gaps.remove(pid);   // past the hole (the operator accepted the loss): a later one is reported again
    }
    isolating.remove(pid);
    return applied;
  }

  /**
   * PostgreSQL: takes this journal's advisory lock for the transaction, or answers false when another
   * instance holds it. H2 (one node) has none: the position's compare-and-set alone keeps it exact.
   */
  private boolean lock(Connection c, String pid) throws SQLException {
    if (db.dialect() != Dialect.POSTGRES) {
      return true;
    }
    try (PreparedStatement st = c.prepareStatement("SELECT pg_try_advisory_xact_lock(?)")) {
      st.setLong(1, ((long) name.hashCode() << 32) ^ (pid.hashCode() & 0xffffffffL));
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        return rs.getBoolean(1);
      }
    }
  }

  private long position(Connection c, String pid) throws SQLException {
    try (PreparedStatement st = c.prepareStatement(
        "SELECT seq FROM fencepost_projection_offsets WHERE projection = ? AND persistence_id = ?")) {
      st.setString(1, name);
      st.setString(2, pid);
      try (ResultSet rs = st.executeQuery()) {
        return rs.next() ? rs.getLong(1) : 0;
      }
    }
  }

  /**
   * Compare-and-set of the position; false when another instance got there first. A projection
   * registered by {@link #installSchema()} has a row at 0; one that was not gets it inserted.
   */
  private boolean advance(Connection c, String pid, long expected, long next) throws SQLException {
    try (PreparedStatement st = c.prepareStatement("UPDATE fencepost_projection_offsets SET seq = ? "
        + "WHERE projection = ? AND persistence_id = ? AND seq = ?")) {
      st.setLong(1, next);
      st.setString(2, name);
      st.setString(3, pid);
      st.setLong(4, expected);
      int updated = st.executeUpdate();
      if (updated == 1 || expected != 0) {
        return updated == 1;
      }
    }
    try (PreparedStatement st = c.prepareStatement("INSERT INTO fencepost_projection_offsets "
        + "(projection, persistence_id, seq) VALUES (?, ?, ?)")) {
      st.setString(1, name);
      st.setString(2, pid);
      st.setLong(3, next);
      st.executeUpdate();
      return true;
    } catch (SQLException e) {
      if (e.getSQLState() != null && e.getSQLState().startsWith("23")) {
        return false;   // the other instance inserted the first position
      }
      throw e;
    }
  }

}
