package io.fencepost.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.function.IntConsumer;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigUtil;
import io.fencepost.JournalIdentity;
import io.fencepost.PartitionActorSettings;
import io.fencepost.PartitionId;
import io.fencepost.errors.JournalLayoutException;
import io.fencepost.jdbc.internal.JournalIdentities;
import io.fencepost.jdbc.internal.JournalIdentities.Recorded;

/**
 * The journal databases of one deployment, in a fixed order. Each partition's history (its journal and
 * snapshots) lives in exactly one of them, {@link #indexOf(PartitionId)}, for the deployment's life,
 * and that database's unique key fences it as a single database does.
 *
 * <p>The order is part of the data: database {@code i} holds the histories of the partitions that map
 * to {@code i}. If the list were reordered, shortened or lengthened, a partition would recover from a
 * database without its history, start from offset 0 and apply everything again. So each database
 * records which one it is (index {@code i} of {@code N}, and the deployment's name) when the
 * deployment first starts, and {@link #verifyIdentities()} refuses, in one line naming each
 * database and what it says, to go on with a list that does not match.
 */
public final class JournalDatabases {

  /** The deployment name of a single database that never recorded one ({@link #asRecorded}). */
  private static final String UNRECORDED = "unrecorded";

  private final String deployment;
  private final List<JournalDatabase> databases;

  private JournalDatabases(String deployment, List<JournalDatabase> databases) {
    this.deployment = Objects.requireNonNull(deployment, "deployment");
    List<JournalDatabase> listed = List.copyOf(databases);
    // alone, a database keeps pekko-persistence-jdbc's plugin ids; of several, each has its own
    this.databases = listed.size() == 1 ? listed
        : IntStream.range(0, listed.size()).mapToObj(i -> listed.get(i).asDatabase(i)).toList();
    if (deployment.isBlank() || deployment.length() > JournalIdentities.MAX_DEPLOYMENT_LENGTH
        || deployment.indexOf('|') >= 0) {
      throw new IllegalArgumentException("a deployment name is 1 to " + JournalIdentities.MAX_DEPLOYMENT_LENGTH
          + " characters, not blank, without '|', was [" + deployment + "]");
    }
    if (listed.isEmpty()) {
      throw new IllegalArgumentException("[" + deployment + "] needs at least one journal database");
    }
    long distinct = listed.stream().map(JournalDatabase::jdbcUrl).distinct().count();
    if (distinct != listed.size()) {
      throw new IllegalArgumentException("[" + deployment + "] lists a journal database twice: " + urls());
    }
  }

  /**
   * The databases of deployment {@code deployment} (a name the databases record: the same on every
   * node, e.g. the service's name), in the order they were first used.
   */
  public static JournalDatabases of(String deployment, List<JournalDatabase> databases) {
    return new JournalDatabases(deployment, databases);
  }

  /**
   * The deployment whose databases these are, as they record it, for tools that read or repair
   * histories next to a running deployment ({@code verify}, {@code offsets reset}): nothing is
   * written. Throws {@link IllegalStateException}, naming each database and what it says, unless
   * database {@code i} records that it is database {@code i} of this many of one deployment (a single
   * database may record nothing: it was never one of several).
   */
  public static JournalDatabases asRecorded(List<JournalDatabase> databases) {
    JournalDatabases unnamed = new JournalDatabases(UNRECORDED, databases);
    List<Optional<Recorded>> found = new ArrayList<>();
    for (JournalDatabase db : unnamed.databases) {
      found.add(onEach(db, "read", JournalIdentities::readIfRecorded));
    }
    if (databases.size() == 1 && found.get(0).isEmpty()) {
      return unnamed;
    }
    String deployment = found.get(0).map(r -> r.identity().deployment()).orElse(UNRECORDED);
    JournalDatabases named = new JournalDatabases(deployment, databases);
    named.refuseCopies(found);
    named.refuseWhileMoving(found);
    boolean matches = IntStream.range(0, databases.size()).allMatch(i -> named.matches(found.get(i), i));
    if (!matches) {
      throw named.mismatch(found, "the list is not the one the deployment's histories were written with "
          + "(reordered, a database missing or added, or another deployment's)");
    }
    for (int i = 0; i < databases.size(); i++) {
      String registered = found.get(i).get().members();
      if (!registered.isEmpty() && !registered.equals(members(found))) {
        throw named.mismatch(found, "database " + i + " lists other databases as the deployment's (one of these is a "
            + "copy, or another database claimed its place)");
      }
    }
    return named;
  }

  /** A deployment with one journal database: every partition's history is in it. */
  public static JournalDatabases single(String deployment, JournalDatabase database) {
    return of(deployment, List.of(database));
  }

  public String deployment() {
    return deployment;
  }

  /** The databases, in order. */
  public List<JournalDatabase> databases() {
    return databases;
  }

  public int size() {
    return databases.size();
  }

  /**
   * The index of the database that holds partition {@code id}'s history: the Java {@code hashCode} of
   * {@code group|topic|partition} (as the Java Language Specification defines it for strings)
   * modulo the number of databases. Fixed for the deployment's life: consecutive partitions of a topic
   * usually alternate between databases.
   */
  public int indexOf(PartitionId id) {
    return id.journalDatabase(databases.size());
  }

  /** The database that holds partition {@code id}'s history. */
  public JournalDatabase databaseOf(PartitionId id) {
    return databases.get(indexOf(id));
  }

  /** Creates pekko-persistence-jdbc's tables in each database that has none. */
  public void installSchemaIfMissing() {
    databases.forEach(JournalDatabase::installSchemaIfMissing);
  }

  /**
   * The Pekko configuration of the deployment, once {@link #verifyIdentities()} passed (it throws
   * otherwise, so a node never runs with a list that would send a partition to a database without its
   * history). Layer it over the application's config with {@code withFallback}.
   *
   * <p>Either way {@code fencepost.partition-actor.journal-database-urls} lists the URLs just verified,
   * in order: a pipeline refuses to start when its journal plugin of database {@code i} reaches
   * another (a layer above this one changed a pool's URL). One database: otherwise exactly
   * {@link JournalDatabase#pekkoConfig()}. Several: each database gets a pool
   * ({@code pekko-persistence-jdbc.shared-databases.fencepost-db-<i>}) and four plugins of its own,
   * copies of pekko-persistence-jdbc's defaults named by its index ({@code fencepost-journal-<i>},
   * {@code fencepost-snapshot-store-<i>}, {@code fencepost-read-journal-<i>},
   * {@code fencepost-durable-state-store-<i>}: tune them there), and the partition actors and the
   * outbox relays are pointed at them ({@code fencepost.partition-actor.journal-databases} and the
   * plugin ids with {@code {database}}). No default journal is set: whatever does not know which
   * database a partition lives in fails loudly instead of writing to the wrong one.
   */
  public Config pekkoConfig() {
    verifyIdentities();
    Config verified = ConfigFactory.parseString(PartitionActorSettings.VERIFIED_URLS + " = " + databases.stream()
        .map(db -> ConfigUtil.quoteString(db.jdbcUrl())).collect(Collectors.joining(", ", "[", "]")));
    if (databases.size() == 1) {
      return verified.withFallback(databases.get(0).pekkoConfig());
    }
    String placeholder = PartitionActorSettings.DATABASE_PLACEHOLDER;
    Config config = ConfigFactory.parseString(String.join("\n",
        "fencepost.partition-actor.journal-databases = " + databases.size(),
        "fencepost.partition-actor.journal-plugin-id = \"fencepost-journal-" + placeholder + "\"",
        "fencepost.partition-actor.snapshot-plugin-id = \"fencepost-snapshot-store-" + placeholder + "\"",
        "fencepost.pipeline.outbox.read-journal-plugin-id = \"fencepost-read-journal-" + placeholder + "\"",
        "fencepost.pipeline.outbox.durable-state-plugin-id = \"fencepost-durable-state-store-" + placeholder + "\""));
    for (JournalDatabase db : databases) {
      config = config.withFallback(db.pluginsConfig());
    }
    return verified.withFallback(config);
  }

  /**
   * Checks that every database is the one the list says it is, recording the identities on a
   * deployment's first start (while no database holds a journal entry; a single database is recorded
   * whatever it holds, since every partition's history is in it anyway). Safe to call from several
   * nodes at once. Throws {@link JournalLayoutException} when a database says it is another index, of
   * another count or of another deployment, records nothing while the deployment has a history, lists
   * other databases as the deployment's, or is being moved; {@link IllegalStateException} when a
   * database cannot be reached. A refused start undoes its own registrations of the list (and its
   * claims) too, so nothing it wrote blocks the right list.
   */
  public void verifyIdentities() {
    verifyIdentities(index -> { });
  }

  /** {@link #verifyIdentities()}, calling {@code beforeRegistering} with each index just before registering on it. */
  void verifyIdentities(IntConsumer beforeRegistering) {
    List<Optional<Recorded>> found = new ArrayList<>();
    for (JournalDatabase db : databases) {
      found.add(onEach(db, "read", JournalIdentities::read));
    }
    refuseCopies(found);
    refuseWhileMoving(found);
    // Nothing is recorded on a refused start: a wrong list must leave no trace.
    boolean contradicted = IntStream.range(0, databases.size())
        .anyMatch(i -> found.get(i).isPresent() && !matches(found.get(i), i));
    if (contradicted) {
      throw mismatch(found, "the configured list is not the one the deployment's histories were written with "
          + "(reordered, a database missing or added, or another deployment's)");
    }
    List<Integer> claimedHere = new ArrayList<>();
    List<String> claimedMembers = new ArrayList<>();
    if (found.stream().anyMatch(Optional::isEmpty)) {
      if (databases.size() > 1 && databases.stream()
          .anyMatch(db -> onEach(db, "read", JournalIdentities::holdsJournalEntries))) {
        throw mismatch(found, "a database records no identity while the deployment already has journal entries "
            + "(a database replaced by an empty one, or added without moving histories into it)");
      }
      // In order, stopping at the first place another node took with another list.
      for (int i = 0; i < databases.size(); i++) {
        if (found.get(i).isEmpty()) {
          JournalIdentity wanted = expected(i);
          String mine = UUID.randomUUID().toString();
          Recorded now;
          try {
            now = onEach(databases.get(i), "record", c -> JournalIdentities.claim(c, wanted, mine));
          } catch (RuntimeException e) {
            // A database away, or its answer lost: this claim may have committed. Its member id is this
            // call's alone, so releasing it (a no-op when it did not commit) is safe, like the others.
            List<Integer> undo = new ArrayList<>(claimedHere);
            List<String> undoMembers = new ArrayList<>(claimedMembers);
            undo.add(i);
            undoMembers.add(mine);
            for (Throwable t : released(undo, undoMembers, new JournalLayoutException("undo")).getSuppressed()) {
              e.addSuppressed(t);
            }
            throw e;
          }
          found.set(i, Optional.of(now));
          if (now.member().equals(mine)) {
            claimedHere.add(i);
            claimedMembers.add(mine);
          }
          if (!matches(found.get(i), i)) {
            throw released(claimedHere, claimedMembers,
                mismatch(found, "another node recorded other identities at the same time, with another list"));
          }
        }
      }
    }
    // Every database lists every database's member id: two lists that share any database cannot both pass.
    String listed = members(found);
    for (int i = 0; i < databases.size(); i++) {
      String registered = found.get(i).get().members();
      if (!registered.isEmpty() && !registered.equals(listed)) {
        throw released(claimedHere, claimedMembers, otherList(found, i));
      }
    }
    // Each registration counts this start; a refusal takes back exactly its own (a twin's stay).
    List<Integer> registeredHere = new ArrayList<>();
    for (int i = 0; i < databases.size(); i++) {
      String member = found.get(i).get().member();
      String registered;
      try {
        beforeRegistering.accept(i);
        registered = onEach(databases.get(i), "record", c -> JournalIdentities.register(c, listed, member));
      } catch (RuntimeException e) {
        // A database away, or its answer lost: this registration may have committed, and a count cannot
        // tell whose it is. The registrations made before it are taken back; the claims stay, so that a
        // registration left on this database still names member ids that exist (the right list, started
        // again, computes the same list and passes; releasing a claim here would leave that registration
        // naming a member id no database has, refusing every later start).
        JournalLayoutException undo = new JournalLayoutException("undo");
        unregistered(registeredHere, listed, undo);
        for (Throwable t : undo.getSuppressed()) {
          e.addSuppressed(t);
        }
        throw e;
      }
      if (!registered.equals(listed)) {
        JournalLayoutException refusal = otherList(found, i);
        unregistered(registeredHere, listed, refusal);
        throw released(claimedHere, claimedMembers, refusal);
      }
      registeredHere.add(i);
    }
  }

  private JournalLayoutException otherList(List<Optional<Recorded>> found, int index) {
    return mismatch(found, "database " + index + " lists other databases as the deployment's (another node started "
        + "at the same time with another list, or one of these databases is a copy or claimed another's place)");
  }

  /** Takes back this call's registrations of {@code listed}; failures join {@code refusal}. */
  private void unregistered(List<Integer> indexes, String listed, JournalLayoutException refusal) {
    for (int i : indexes) {
      try {
        onEach(databases.get(i), "release", c -> {
          JournalIdentities.unregister(c, listed);
          return null;
        });
      } catch (RuntimeException e) {
        refusal.addSuppressed(e);
      }
    }
  }

  /** Undoes this call's claims (of databases that hold no history and list no members yet); returns {@code refusal}. */
  private JournalLayoutException released(List<Integer> indexes, List<String> members,
      JournalLayoutException refusal) {
    for (int k = 0; k < indexes.size(); k++) {
      String member = members.get(k);
      try {
        onEach(databases.get(indexes.get(k)), "release", c -> {
          JournalIdentities.release(c, member);
          return null;
        });
      } catch (RuntimeException e) {
        refusal.addSuppressed(e);
      }
    }
    return refusal;
  }

  private boolean matches(Optional<Recorded> recorded, int index) {
    return recorded.isPresent() && recorded.get().identity().equals(expected(index));
  }

  private static String members(List<Optional<Recorded>> found) {
    return found.stream().map(r -> r.map(Recorded::member).orElse("?")).collect(Collectors.joining(","));
  }

  /**
   * Refuses a list naming a copy of a deployment's database (its identity was recorded in another
   * database): beside its original, writes would split between them and the unique key that fences a
   * partition's history would fence only half of it.
   */
  private void refuseCopies(List<Optional<Recorded>> found) {
    for (int i = 0; i < databases.size(); i++) {
      Optional<Recorded> r = found.get(i);
      if (r.isPresent() && r.get().copied()) {
        throw new JournalLayoutException("[" + deployment + "] journal databases refused: database " + i + " of "
            + databases.size() + " (" + databases.get(i).jdbcUrl() + ") " + r.get() + ", but that identity was "
            + "recorded in another database (" + r.get().place() + "; this is " + r.get().here() + "): it is a copy, "
            + "a restore or a clone of the deployment's database. Beside its original it would split partitions' "
            + "histories between them. Give the original's URL; or, if the original is gone for good (this is its "
            + "restore from a backup, or its server was upgraded with pg_upgrade), stop every node and run "
            + "`fencepost journal adopt " + databases.stream().map(db -> "--jdbc-url " + db.jdbcUrl())
            .collect(Collectors.joining(" ")) + "` once (the deployment's databases in order), then start them");
      }
    }
  }

  /** Refuses any list while a move of histories is unfinished: no partition's home is certain then. */
  private void refuseWhileMoving(List<Optional<Recorded>> found) {
    if (found.stream().anyMatch(r -> r.isPresent() && r.get().identity().moving())) {
      throw mismatch(found, "a move of the deployment's histories began and has not finished (was it "
          + "interrupted?); run the same `fencepost journal move` again to finish it, then start the nodes with the "
          + "new list");
    }
  }

  /** A step on one database, over a connection of its own; a failure names the database and the fix. */
  private static <T> T onEach(JournalDatabase db, String what, SqlStep<T> step) {
    try (Connection c = db.connect()) {
      return step.apply(c);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot " + what + " the journal identity of [" + db.jdbcUrl() + "] (table "
          + JournalIdentities.TABLE + "): " + e.getMessage() + "; check that the database is up and the user may "
          + "create tables", e);
    }
  }

  private interface SqlStep<T> {
    T apply(Connection c) throws SQLException;
  }

  private JournalIdentity expected(int index) {
    return new JournalIdentity(deployment, index, databases.size());
  }

  private JournalLayoutException mismatch(List<Optional<Recorded>> found, String why) {
    String each = IntStream.range(0, databases.size()).mapToObj(i -> "database " + i + " of " + databases.size()
        + " (" + databases.get(i).jdbcUrl() + ") " + found.get(i).map(Recorded::toString).orElse("records no identity"))
        .collect(Collectors.joining("; "));
    return new JournalLayoutException("[" + deployment + "] journal databases refused: " + why + ": " + each
        + ". List the databases in the order the deployment first used them; databases are added only by moving "
        + "the histories of the partitions that map to them while no node runs");
  }

  private String urls() {
    return databases.stream().map(JournalDatabase::jdbcUrl).collect(Collectors.joining(", ", "[", "]"));
  }

  @Override
  public String toString() {
    return "JournalDatabases(" + deployment + ", " + urls() + ")";
  }
}
