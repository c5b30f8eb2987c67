package io.fencepost.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.Consumer;
import java.util.stream.Collectors;

import io.fencepost.JournalIdentity;
import io.fencepost.PartitionId;
import io.fencepost.errors.JournalLayoutException;
import io.fencepost.jdbc.internal.HistoryRows;
import io.fencepost.jdbc.internal.JournalFence;
import io.fencepost.jdbc.internal.JournalIdentities;
import io.fencepost.jdbc.internal.JournalIdentities.Recorded;

/**
 * Adds journal databases to a deployment, offline: every partition whose history the longer list maps
 * to another database is moved there, with its snapshots, window segments, outbox relay position and
 * projection positions, and each database then records its place in the longer list.
 *
 * <p>Refuses, before changing anything, while any other session is connected to one of the databases
 * (a node runs: its pool holds connections), when the current list is not what the databases record,
 * when the longer list does not start with the current one in order, or when an added database holds a
 * journal. That count is a courtesy: what keeps a writer it cannot see (a pool that held no
 * connection at that moment, a connection pooler) out is the journal fence the move installs in every
 * database (see {@code JournalFence}): from the moment a database records that a move is under way,
 * committed before anything is copied from it, it refuses every write of a partition's rows but the
 * move's own, and once settled every write of a partition that does not live there. Then two rounds of
 * one transaction per database: first each database takes in the histories that move to it (read from
 * each source as one consistent image), then each drops the histories that moved away and records
 * its new place. An interrupted move leaves every history in at least one database and no node able
 * to start; running the same move again finishes it.
 *
 * <p>Read models ({@link JdbcProjection}) are the application's tables: a moved partition's rows up to
 * the move stay in its old database, and its projection position moves with it, so later batches are
 * projected in the new one. A read model that sums over databases stays right; one that keeps a
 * partition's rows in one place must move them itself, or be rebuilt.
 */
public final class JournalMove {

  /** What a move did. */
  public record Report(List<PartitionId> moved, long rows) {
  }

  private final String deployment;
  private final List<JournalDatabase> current;
  private final List<JournalDatabase> target;
  private final Consumer<String> progress;

  private JournalMove(String deployment, List<JournalDatabase> current, List<JournalDatabase> added,
      Consumer<String> progress) {
    this.deployment = Objects.requireNonNull(deployment, "deployment");
    this.current = List.copyOf(current);
    List<JournalDatabase> all = new ArrayList<>(current);
    all.addAll(added);
    this.target = List.copyOf(all);
    this.progress = Objects.requireNonNull(progress, "progress");
    if (current.isEmpty() || added.isEmpty()) {
      throw new IllegalArgumentException("a move needs the current databases and at least one to add");
    }
    JournalDatabases.of(deployment, target);   // no database listed twice
  }

  /**
   * Moves deployment {@code deployment}'s histories from {@code current} (its databases, in order) to
   * {@code current} followed by {@code added}; {@code progress} gets a line per partition moved.
   *
   * @throws JournalLayoutException when refused (nothing changed then)
   * @throws IllegalStateException when a database fails midway (run the same move again)
   */
  public static Report addDatabases(String deployment, List<JournalDatabase> current, List<JournalDatabase> added,
      Consumer<String> progress) {
    return new JournalMove(deployment, current, added, progress).run();
  }

  private Report run() {
    List<Connection> connections = new ArrayList<>();
    try {
      for (JournalDatabase db : target) {
        Connection c = db.connect();
        connections.add(c);
        JournalFence.enterMove(c);
      }
      // Checked before anything is installed or locked: a refused move leaves no trace, and never
      // queues a running deployment's writes behind a lock.
      List<Optional<Recorded>> before = new ArrayList<>();
      for (Connection c : connections) {
        before.add(JournalIdentities.readIfRecorded(c));
      }
      refuseUnlessOffline(connections);
      checkLayout(connections, before);
      // Tables and the fence next, outside the move's transactions: H2 commits an open transaction on DDL.
      HistoryRows.createTables(connections);
      List<PartitionId> known = knownPartitions(connections);
      for (int i = 0; i < target.size(); i++) {
        JournalFence.install(connections.get(i));
        JournalFence.checkHash(connections.get(i), target.get(i).jdbcUrl(), known);
      }
      for (Connection c : connections) {
        c.setAutoCommit(false);
      }
      List<Optional<Recorded>> found = new ArrayList<>();
      for (int i = 0; i < target.size(); i++) {
        Connection c = connections.get(i);
        HistoryRows.lockIdentity(c);
        found.add(JournalIdentities.readIfRecorded(c));
      }
      refuseUnlessOffline(connections);
      checkLayout(connections, found);
      List<String> members = new ArrayList<>();
      for (int i = 0; i < target.size(); i++) {
        members.add(found.get(i).map(Recorded::member).orElseGet(() -> UUID.randomUUID().toString()));
      }
      markMoving(connections, found, members);
      return move(connections, found, members);
    } catch (SQLException e) {
      if (LOCK_NOT_AVAILABLE.equals(e.getSQLState())) {
        throw new JournalLayoutException("[" + deployment + "] refused to move histories: another session holds the "
            + "journal's tables (no lock within the move's lock timeout): " + e.getMessage() + ". Stop every node of "
            + "the deployment and close other clients of these databases, then run the move again");
      }
      throw new IllegalStateException("[" + deployment + "] the move of histories failed: " + e.getMessage()
          + "; nothing is half-done in a database, and no node starts until the same move is run again", e);
    } finally {
      for (Connection c : connections) {
        try {
          c.rollback();
        } catch (SQLException ignored) {
          // closing anyway
        }
        try {
          c.close();
        } catch (SQLException ignored) {
          // closed
        }
      }
    }
  }

  /** PostgreSQL's lock_not_available: a lock wait ran past the move's lock timeout. */
  private static final String LOCK_NOT_AVAILABLE = "55P03";

  /** Every partition with rows in one of the databases. */
  private static List<PartitionId> knownPartitions(List<Connection> connections) throws SQLException {
    TreeSet<PartitionId> partitions = new TreeSet<>((x, y) -> x.qualifiedName().compareTo(y.qualifiedName()));
    for (Connection c : connections) {
      partitions.addAll(HistoryRows.partitions(c));
    }
    return List.copyOf(partitions);
  }

  /**
   * Records in every database, committed before anything moves, that a move is under way: from then on
   * a node refuses to start on any list (its identity check, and its pipeline's, read the mark). Then
   * checks again that no other session is connected; if one is, puts back what each database recorded
   * and refuses.
   */
  private void markMoving(List<Connection> connections, List<Optional<Recorded>> found, List<String> members)
      throws SQLException {
    int m = target.size();
    for (int i = 0; i < m; i++) {
      if (found.get(i).map(r -> r.identity().moving() || r.identity().count() == m).orElse(false)) {
        continue;   // marked (or settled) by an earlier run of this move
      }
      JournalIdentities.replace(connections.get(i), new JournalIdentity(deployment, i, m, true), members.get(i),
          found.get(i).map(Recorded::members).orElse(""));
      connections.get(i).commit();
    }
    try {
      refuseUnlessOffline(connections);
    } catch (JournalLayoutException busy) {
      for (int i = 0; i < m; i++) {
        Optional<Recorded> before = found.get(i);
        if (before.map(r -> r.identity().moving() || r.identity().count() == m).orElse(false)) {
          continue;
        }
        if (before.isPresent()) {
          JournalIdentities.replace(connections.get(i), before.get().identity(), before.get().member(),
              before.get().members());
        } else {
          JournalIdentities.erase(connections.get(i));
        }
        connections.get(i).commit();
      }
      throw new JournalLayoutException(busy.getMessage() + ". A node that wrote while the move was marked had its "
          + "writes refused and halted (cause journal-moved): restart it");
    }
    progress.accept("every database records that a move is under way: no node starts until it ends");
  }

  /** No other session on any database: no node runs (its pool would hold connections). */
  private void refuseUnlessOffline(List<Connection> connections) throws SQLException {
    List<String> busy = HistoryRows.busy(connections, target.stream().map(JournalDatabase::jdbcUrl).toList());
    if (!busy.isEmpty()) {
      throw new JournalLayoutException("[" + deployment + "] refused to move histories while other sessions are "
          + "connected (a node runs, or another tool): " + String.join("; ", busy) + ". Stop every node of the "
          + "deployment (and close other clients of these databases), then run the move again; nothing was changed");
    }
  }

  /**
   * Each database must say it is its place in the current list (a fresh move), or in the longer list
   * (a move that got that far before it was interrupted); an added database must hold no journal.
   */
  private void checkLayout(List<Connection> connections, List<Optional<Recorded>> found) throws SQLException {
    List<String> wrong = new ArrayList<>();
    for (int i = 0; i < target.size(); i++) {
      Optional<JournalIdentity> id = found.get(i).map(Recorded::identity);
      JournalIdentity after = new JournalIdentity(deployment, i, target.size());
      boolean ok;
      if (i < current.size()) {
        JournalIdentity before = new JournalIdentity(deployment, i, current.size());
        boolean unrecordedSingle = current.size() == 1 && id.isEmpty();
        ok = unrecordedSingle || id.map(x -> x.equals(before) || x.moving(false).equals(after)).orElse(false);
      } else {
        Connection added = connections.get(i);
        ok = id.map(x -> x.moving(false).equals(after)).orElseGet(() -> !holdsJournal(added));
      }
      if (found.get(i).map(Recorded::copied).orElse(false)) {
        wrong.add("database " + i + " (" + target.get(i).jdbcUrl() + ") " + id.get() + " but is a copy of the "
            + "database that recorded it (" + found.get(i).get().place() + "; this is " + found.get(i).get().here()
            + "): give the original, or `fencepost journal adopt` it if the original is gone for good");
      } else if (!ok) {
        wrong.add("database " + i + " (" + target.get(i).jdbcUrl() + ") "
            + id.map(JournalIdentity::toString).orElse(i < current.size() ? "records no identity"
                : "records no identity but holds journal entries (an added database must be empty)"));
      }
    }
    // A fresh move: every current database registers the current list (an original that came back after
    // its copy was adopted does not).
    String listed = found.subList(0, current.size()).stream().map(r -> r.map(Recorded::member).orElse("?"))
        .collect(Collectors.joining(","));
    for (int i = 0; i < current.size(); i++) {
      Optional<Recorded> r = found.get(i);
      if (r.isPresent() && r.get().identity().equals(new JournalIdentity(deployment, i, current.size()))
          && !r.get().members().isEmpty() && !r.get().members().equals(listed)) {
        wrong.add("database " + i + " (" + target.get(i).jdbcUrl() + ") lists other databases as the deployment's "
            + "(give the databases the nodes run on: one of these may be an original whose copy was adopted)");
      }
    }
    if (!wrong.isEmpty()) {
      throw new JournalLayoutException("[" + deployment + "] refused to move histories from " + current.size()
          + " to " + target.size() + " databases: " + String.join("; ", wrong) + ". Give the current databases "
          + "in the order the deployment uses them, then the added ones; nothing was changed");
    }
  }

  private static boolean holdsJournal(Connection c) {
    try {
      return JournalIdentities.holdsJournalEntries(c);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot read the journal of an added database: " + e.getMessage(), e);
    }
  }

  private Report move(List<Connection> connections, List<Optional<Recorded>> found, List<String> members)
      throws SQLException {
    int n = current.size();
    int m = target.size();
    // Databases that already dropped the histories that moved away (a run interrupted in round 2):
    // every copy was committed before the first of them did.
    boolean[] settled = new boolean[m];
    for (int i = 0; i < m; i++) {
      JournalIdentity after = new JournalIdentity(deployment, i, m);
      settled[i] = found.get(i).map(x -> x.identity().equals(after)).orElse(false);
    }
    String allMembers = String.join(",", members);
    TreeSet<PartitionId> partitions = new TreeSet<>((x, y) -> x.qualifiedName().compareTo(y.qualifiedName()));
    for (int i = 0; i < n; i++) {
      partitions.addAll(HistoryRows.partitions(connections.get(i)));
    }
    List<PartitionId> moved = new ArrayList<>();
    long rows = 0;
    // Round 1 reads each database as one image (repeatable read): a history's journal, snapshots,
    // window segments and positions as they stood together, whatever a writer the move did not see
    // still does to the tables the fence leaves open (deletes).
    for (Connection c : connections) {
      c.commit();   // ends the reads above: the isolation changes between transactions only
      c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
    }
    // Round 1: each database takes in what moves to it, from a source that still holds it (again,
    // after an interruption: a copy replaces what an earlier run copied).
    for (int to = 0; to < m; to++) {
      if (settled[to]) {
        continue;
      }
      for (PartitionId p : partitions) {
        int from = p.journalDatabase(n);
        if (p.journalDatabase(m) == to && from != to && !settled[from]) {
          long copied = HistoryRows.copy(connections.get(from), connections.get(to), p);
          rows += copied;
          progress.accept(p.shortName() + " (" + p.qualifiedName() + "): " + copied + " rows, database " + from
              + " -> " + to);
        }
      }
    }
    for (int i = 0; i < m; i++) {
      connections.get(i).commit();
      connections.get(i).setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
    }
    progress.accept("every database took in the histories that move to it");
    // Round 2: each database drops what moved away, and records its place in the longer list.
    for (int from = 0; from < m; from++) {
      if (settled[from]) {
        continue;
      }
      for (PartitionId p : partitions) {
        if (from < n && p.journalDatabase(n) == from && p.journalDatabase(m) != from) {
          HistoryRows.delete(connections.get(from), p);
          moved.add(p);
        }
      }
      JournalIdentities.replace(connections.get(from), new JournalIdentity(deployment, from, m), members.get(from),
          allMembers);
      connections.get(from).commit();
      progress.accept("database " + from + " (" + target.get(from).jdbcUrl() + ") dropped the histories that moved "
          + "away and records that it is database " + from + " of " + m);
    }
    progress.accept("[" + deployment + "] " + moved.size() + " partition(s) moved, " + rows + " rows copied; the "
        + m + " databases record their places: start the nodes with all " + m + " in this order");
    moved.sort(Comparator.comparing(PartitionId::topic).thenComparing(PartitionId::partition));
    return new Report(List.copyOf(moved), rows);
  }
}
