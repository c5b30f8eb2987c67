package io.fencepost.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Consumer;

import io.fencepost.JournalIdentity;
import io.fencepost.errors.JournalLayoutException;
import io.fencepost.jdbc.internal.HistoryRows;
import io.fencepost.jdbc.internal.JournalIdentities;
import io.fencepost.jdbc.internal.JournalIdentities.Recorded;

/**
 * Makes a deployment's list of journal databases its list again after one of them was replaced by a
 * copy (a restore of a backup into another server or database, a server upgraded with pg_upgrade),
 * which every start refuses until then ({@link JournalDatabases#verifyIdentities()}): each copy in the
 * list becomes the database its identity says, under a member id of its own, and the list is
 * registered again on every database, so the original (which keeps the old member id) is refused
 * beside it from then on wherever it shares a database with the list (when every database is a
 * copy, nothing can refuse the originals: a progress line says so). Refused while any other session
 * is connected to one of the databases, when a database lists another deployment's databases, and
 * for a copy taken while a move was under way. Running it again after an interruption finishes it.
 *
 * <p>Only for a copy whose original is gone for good: the copy holds the histories as they were when
 * it was taken, so its partitions recover from there (a restore older than the lost original applies
 * again whatever came after it, from the input topics' retention).
 */
public final class JournalAdoption {

  /** What an adoption did: the indexes of the copies it adopted (empty: none was a copy). */
  public record Report(List<Integer> adopted) {
  }

  private JournalAdoption() {
  }

  /**
   * Refuses to register the list {@code members} over a list that is not this deployment's. The lists
   * registered on the databases that are not copies and not being moved (a copy's, or a moving
   * database's, is stale and registered anew) must name, at the place of each database that is not a
   * copy, the member id it has or was adopted from. Another deployment's database given by mistake (a
   * staging database of the same name) is refused, not registered into this one.
   */
  private static void refuseOtherLists(String deployment, List<JournalDatabase> databases, List<Recorded> found) {
    int n = databases.size();
    for (int j = 0; j < n; j++) {
      Recorded holder = found.get(j);
      String registered = holder.members();
      if (registered.isEmpty() || holder.copied() || holder.identity().moving()) {
        continue;
      }
      String[] ids = registered.split(",", -1);
      boolean ours = ids.length == n;
      for (int k = 0; ours && k < n; k++) {
        Recorded r = found.get(k);
        ours = r.copied() || ids[k].equals(r.member()) || (!r.adoptedFrom().isEmpty() && ids[k].equals(r.adoptedFrom()));
      }
      if (!ours) {
        throw new JournalLayoutException("[" + deployment + "] refused to adopt: database " + j + " ("
            + databases.get(j).jdbcUrl() + ") lists other databases as the deployment's than these (is one of them "
            + "another deployment's?). Give the deployment's databases in order, the copies in their originals' "
            + "places; nothing was changed");
      }
    }
  }

  /**
   * Adopts the copies among {@code databases} (the deployment's, in order); {@code progress} gets a
   * line per database changed.
   *
   * @throws JournalLayoutException when refused (nothing changed then)
   * @throws IllegalStateException when a database fails (run it again)
   */
  public static Report adoptCopies(List<JournalDatabase> databases, Consumer<String> progress) {
    JournalDatabases.of("adoption", databases);   // none listed twice
    List<Connection> connections = new ArrayList<>();
    try {
      for (JournalDatabase db : databases) {
        connections.add(db.connect());
      }
      List<Recorded> found = new ArrayList<>();
      List<String> wrong = new ArrayList<>();
      for (int i = 0; i < databases.size(); i++) {
        Optional<Recorded> r = JournalIdentities.readIfRecorded(connections.get(i));
        r.ifPresent(found::add);
        if (r.isEmpty()) {
          wrong.add("database " + i + " (" + databases.get(i).jdbcUrl() + ") records no identity");
        }
      }
      if (wrong.isEmpty()) {
        String deployment = found.get(0).identity().deployment();
        for (int i = 0; i < databases.size(); i++) {
          JournalIdentity expected = new JournalIdentity(deployment, i, databases.size());
          if (!found.get(i).identity().moving(false).equals(expected)) {
            wrong.add("database " + i + " (" + databases.get(i).jdbcUrl() + ") " + found.get(i));
          }
        }
      }
      if (!wrong.isEmpty()) {
        throw new JournalLayoutException("refused to adopt: " + String.join("; ", wrong) + ". Give the deployment's "
            + "databases in the order it uses them, each recording its place; nothing was changed");
      }
      String deployment = found.get(0).identity().deployment();
      List<String> busy = HistoryRows.busy(connections, databases.stream().map(JournalDatabase::jdbcUrl).toList());
      if (!busy.isEmpty()) {
        throw new JournalLayoutException("[" + deployment + "] refused to adopt while other sessions are connected (a "
            + "node runs, or another tool): " + String.join("; ", busy) + ". Stop every node of the deployment, then "
            + "run it again; nothing was changed");
      }
      List<String> moving = new ArrayList<>();
      List<String> members = new ArrayList<>();
      for (int i = 0; i < databases.size(); i++) {
        Recorded r = found.get(i);
        if (r.copied() && r.identity().moving()) {
          moving.add("database " + i + " (" + databases.get(i).jdbcUrl() + ")");
        }
        members.add(r.copied() ? UUID.randomUUID().toString() : r.member());
      }
      if (!moving.isEmpty()) {
        throw new JournalLayoutException("[" + deployment + "] refused to adopt " + String.join(", ", moving)
            + ": a copy taken while a move of histories was under way may lack histories the move had not yet "
            + "copied into it, and the move, run again, would not copy them from databases that already gave them "
            + "up. Restore a backup taken before the move began (with the list of then) or after it ended; "
            + "nothing was changed");
      }
      refuseOtherLists(deployment, databases, found);
      List<Integer> adopted = new ArrayList<>();
      for (int i = 0; i < databases.size(); i++) {
        Recorded r = found.get(i);
        if (r.copied()) {
          JournalIdentities.adopt(connections.get(i), members.get(i), r.here());
          adopted.add(i);
          progress.accept("[" + deployment + "] database " + i + " (" + databases.get(i).jdbcUrl() + ") adopted: "
              + "its identity was recorded in " + r.place() + ", this is " + r.here());
        }
      }
      // Registered again on every database, also when no copy was left (an interrupted run finishes here).
      String list = String.join(",", members);
      for (Connection c : connections) {
        JournalIdentities.registerAdopted(c, list);
      }
      progress.accept("[" + deployment + "] " + databases.size() + " database(s) registered as the deployment's list"
          + (adopted.isEmpty() ? " (no copy among them)" : "; a database not in it is refused from now on where "
          + "it shares a database with this list"));
      if (adopted.size() == databases.size()) {
        progress.accept("[" + deployment + "] every database of the list is a copy: nothing they record refuses "
            + "their originals, which share no database with this list. Make sure no node is given the originals "
            + "again: drop them, or take the journal's user's access to them away");
      }
      return new Report(List.copyOf(adopted));
    } catch (SQLException e) {
      throw new IllegalStateException("the adoption failed: " + e.getMessage() + "; run it again to finish it", e);
    } finally {
      for (Connection c : connections) {
        try {
          c.close();
        } catch (SQLException ignored) {
          // closed
        }
      }
    }
  }
}
