package io.fencepost.jdbc;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigValueFactory;
import io.fencepost.jdbc.internal.DatabaseDurableStateStoreProvider;
import io.fencepost.jdbc.internal.SqlScripts;
import org.apache.pekko.actor.BootstrapSetup;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Where the journal lives: a JDBC URL with credentials, and what Fencepost needs from it.
 *
 * <p>{@link #pekkoConfig()} renders a complete Pekko configuration for pekko-persistence-jdbc on this
 * database: journal, snapshot store, read journal and durable state sharing one connection pool.
 * {@link #installSchema()} creates pekko-persistence-jdbc's tables from the scripts in its jar,
 * statement by statement with auto-commit (PostgreSQL's {@code CREATE INDEX CONCURRENTLY} refuses to
 * run in a transaction).
 *
 * <pre>{@code
 * JournalDatabase db = JournalDatabase.of("jdbc:postgresql://db:5432/ledger", "ledger", secret);
 * db.installSchemaIfMissing();
 * ActorSystem<Void> system = ActorSystem.create(guardian, "ledger",
 *     db.pekkoConfig().withFallback(ConfigFactory.load()));
 * }</pre>
 */
public final class JournalDatabase {

  private final String jdbcUrl;
  private final String user;
  private final String password;
  private final Dialect dialect;
  private final int maxConnections;
  /** Which database of several it is (its plugins are named by it), or -1: the only one. */
  private final int index;

  private JournalDatabase(String jdbcUrl, String user, String password, int maxConnections, int index) {
    this.jdbcUrl = Objects.requireNonNull(jdbcUrl, "jdbcUrl");
    this.user = Objects.requireNonNull(user, "user");
    this.password = Objects.requireNonNull(password, "password");
    this.dialect = Dialect.ofUrl(jdbcUrl);
    dialect.requireDriver();
    if (dialect == Dialect.H2 && !jdbcUrl.contains("DATABASE_TO_UPPER=false")) {
      throw new IllegalArgumentException("an H2 journal URL must contain ;DATABASE_TO_UPPER=false "
          + "(pekko-persistence-jdbc's tables are lower case), was [" + jdbcUrl + "]");
    }
    if (maxConnections < 1) {
      throw new IllegalArgumentException("maxConnections must be >= 1, was [" + maxConnections + "]");
    }
    this.maxConnections = maxConnections;
    this.index = index;
  }

  /** A journal database at this URL (PostgreSQL or H2), with a pool of 8 connections. */
  public static JournalDatabase of(String jdbcUrl, String user, String password) {
    return new JournalDatabase(jdbcUrl, user, password, 8, -1);
  }

  /**
   * An embedded H2 database in a file (the demo's zero-setup journal), served to other processes by
   * the first one that opens it ({@code AUTO_SERVER}). Each commit is written to the file before it
   * returns ({@code WRITE_DELAY=0}): by default H2 holds commits for up to half a second, and a
   * {@code kill -9} of the process serving the file would lose journal writes it had acknowledged.
   */
  public static JournalDatabase h2File(Path file) {
    return of("jdbc:h2:file:" + file.toAbsolutePath() + ";DATABASE_TO_UPPER=false;AUTO_SERVER=TRUE;WRITE_DELAY=0", "sa", "");
  }

  /** An in-memory H2 database that lives as long as the JVM (unit tests). */
  public static JournalDatabase h2Memory(String name) {
    return of("jdbc:h2:mem:" + name + ";DATABASE_TO_UPPER=false;DB_CLOSE_DELAY=-1", "sa", "");
  }

  /** A copy with another connection-pool size. */
  public JournalDatabase withMaxConnections(int maxConnections) {
    return new JournalDatabase(jdbcUrl, user, password, maxConnections, index);
  }

  /** This database as database {@code index} of several: its plugins are named by the index. */
  JournalDatabase asDatabase(int index) {
    return new JournalDatabase(jdbcUrl, user, password, maxConnections, index);
  }

  /**
   * Which database of a deployment's several it is ({@link JournalDatabases#databases()}), or -1 for a
   * database used alone.
   */
  public int index() {
    return index;
  }

  /**
   * Refuses this database given to {@code who} on its own ({@link #of}: index -1) while the deployment
   * has several journal databases ({@code fencepost.partition-actor.journal-databases} of
   * {@code system}): its plugin ids would then be pekko-persistence-jdbc's defaults, which reach none
   * of them, or another one.
   */
  void requirePlaced(ActorSystem<?> system, String who) {
    int count = system.settings().config().getInt("fencepost.partition-actor.journal-databases");
    if (index < 0 && count > 1) {
      throw new IllegalArgumentException(who + " was given journal database [" + jdbcUrl + "] on its own "
          + "(JournalDatabase.of), while the deployment has " + count + " journal databases "
          + "(fencepost.partition-actor.journal-databases): its plugins would not be that database's. Pass the "
          + "deployment's own: JournalDatabases.databases().get(i), or databaseOf(partition)");
    }
  }

  /** The journal plugin on this database: {@code jdbc-journal} alone, {@code fencepost-journal-<index>} of several. */
  public String journalPluginId() {
    return pluginId("jdbc-journal", "fencepost-journal-");
  }

  /** The snapshot plugin on this database: {@code jdbc-snapshot-store}, or {@code fencepost-snapshot-store-<index>}. */
  public String snapshotPluginId() {
    return pluginId("jdbc-snapshot-store", "fencepost-snapshot-store-");
  }

  /** The query plugin on this database: {@code jdbc-read-journal}, or {@code fencepost-read-journal-<index>}. */
  public String readJournalPluginId() {
    return pluginId("jdbc-read-journal", "fencepost-read-journal-");
  }

  /** The durable-state plugin on this database: {@code jdbc-durable-state-store}, or {@code fencepost-durable-state-store-<index>}. */
  public String durableStatePluginId() {
    return pluginId("jdbc-durable-state-store", "fencepost-durable-state-store-");
  }

  /** The shared pool under {@code pekko-persistence-jdbc.shared-databases}: {@code slick}, or {@code fencepost-db-<index>}. */
  String sharedDatabaseName() {
    return pluginId("slick", "fencepost-db-");
  }

  private String pluginId(String alone, String prefix) {
    return index < 0 ? alone : prefix + index;
  }

  public String jdbcUrl() {
    return jdbcUrl;
  }

  public String user() {
    return user;
  }

  public String password() {
    return password;
  }

  public Dialect dialect() {
    return dialect;
  }

  /** A new JDBC connection (auto-commit on); the caller closes it. */
  public Connection connect() throws SQLException {
    return DriverManager.getConnection(jdbcUrl, user, password);
  }

  /**
   * A Pekko configuration that puts journal, snapshots, read journal and durable state on this
   * database through one shared pool. Layer it over the application's config with
   * {@code withFallback}. (A database of several is configured by {@link JournalDatabases#pekkoConfig()}.)
   */
  public Config pekkoConfig() {
    String plugins = String.join("\n",
        "pekko.persistence.journal.plugin = \"" + journalPluginId() + "\"",
        "pekko.persistence.snapshot-store.plugin = \"" + snapshotPluginId() + "\"",
        "pekko.persistence.state.plugin = \"" + durableStatePluginId() + "\"");
    return ConfigFactory.parseString(plugins).withFallback(pluginsConfig());
  }

  /**
   * This database's shared pool and its four plugins, by their ids: pekko-persistence-jdbc's own
   * ({@code jdbc-journal} ...) for a database used alone, copies of their defaults named by the index
   * for a database of several.
   */
  Config pluginsConfig() {
    Config plugins = ConfigFactory.empty();
    if (index < 0) {
      for (String id : List.of("jdbc-journal", "jdbc-snapshot-store", "jdbc-read-journal", "jdbc-durable-state-store")) {
        plugins = plugins.withValue(id + ".use-shared-db", ConfigValueFactory.fromAnyRef(sharedDatabaseName()));
      }
    } else {
      Config reference = ConfigFactory.defaultReference(JournalDatabase.class.getClassLoader());
      plugins = plugins
          .withValue(journalPluginId(), copy(reference, "jdbc-journal"))
          .withValue(snapshotPluginId(), copy(reference, "jdbc-snapshot-store"))
          .withValue(readJournalPluginId(), copy(reference, "jdbc-read-journal")
              // the read journal finds its event adapters through the journal it reads
              .withValue("write-plugin", ConfigValueFactory.fromAnyRef(journalPluginId())))
          .withValue(durableStatePluginId(), copy(reference, "jdbc-durable-state-store")
              // pekko-persistence-jdbc's own provider reads the root jdbc-durable-state-store block
              .withValue("class", ConfigValueFactory.fromAnyRef(DatabaseDurableStateStoreProvider.class.getName())));
    }
    // After an outage, try the database again within seconds: Pekko's defaults keep the journal's
    // breaker open 30 s and the snapshot store's 60 s (recovery reads snapshots first).
    plugins = plugins
        .withValue(journalPluginId() + ".circuit-breaker.reset-timeout", ConfigValueFactory.fromAnyRef("5s"))
        .withValue(snapshotPluginId() + ".circuit-breaker.reset-timeout", ConfigValueFactory.fromAnyRef("5s"));
    return plugins.withValue("pekko-persistence-jdbc.shared-databases." + sharedDatabaseName(), poolConfig().root());
  }

  private ConfigObject copy(Config reference, String plugin) {
    return reference.getConfig(plugin)
        .withValue("use-shared-db", ConfigValueFactory.fromAnyRef(sharedDatabaseName())).root();
  }

  private Config poolConfig() {
    Config db = ConfigFactory.empty()
        .withValue("profile", ConfigValueFactory.fromAnyRef(dialect.slickProfile()))
        .withValue("db.url", ConfigValueFactory.fromAnyRef(jdbcUrl))
        .withValue("db.user", ConfigValueFactory.fromAnyRef(user))
        .withValue("db.password", ConfigValueFactory.fromAnyRef(password))
        .withValue("db.driver", ConfigValueFactory.fromAnyRef(dialect.driverClass()))
        .withValue("db.numThreads", ConfigValueFactory.fromAnyRef(maxConnections))
        .withValue("db.maxConnections", ConfigValueFactory.fromAnyRef(maxConnections))
        .withValue("db.minConnections", ConfigValueFactory.fromAnyRef(1))

        // Fail a connection attempt in seconds, not HikariCP's default 3 minutes, so a database
        // outage surfaces as a journal failure that the actor backs off from (not a hung write).
        .withValue("db.connectionTimeout", ConfigValueFactory.fromAnyRef(5000));
    if (index >= 0) {
      // Names the pool in the driver's errors ("fencepost-db-1 - Connection is not available"): which
      // of several databases is away.
      db = db.withValue("db.poolName", ConfigValueFactory.fromAnyRef(sharedDatabaseName()));
    }
    if (dialect == Dialect.POSTGRES && !jdbcUrl.contains("prepareThreshold")) {
      // PostgreSQL's driver sends a statement's first four executions as unnamed ones, whose results
      // come as text: a bytea column as hex, twice its size, decoded on the client. Recovery is such
      // a first execution on every connection: a 24 MB snapshot (a million window keys) took 640 ms
      // to fetch as text and 215 ms in binary, measured here. -1 prepares every statement on its
      // first execution, so results come binary from the start. A URL that sets prepareThreshold
      // itself (0 behind PgBouncer's transaction pooling, say) keeps its value.
      db = db.withValue("db.properties.prepareThreshold", ConfigValueFactory.fromAnyRef("-1"));
    }
    return db;
  }

  /**
   * A local actor system on this database (no cluster, no remoting), with classes and configuration
   * from {@code loader}: for tools that read or write a journal next to a running service, which
   * must neither bind the service's port nor join its cluster. The service's configuration supplies
   * its serializers; the journal is this one, whatever plugin ids that configuration names (of a
   * deployment's several databases, only this one: the caller picks the database that holds the
   * partitions it works on, {@link JournalDatabases#databaseOf}).
   */
  public ActorSystem<Void> localSystem(String name, ClassLoader loader) {
    Config config = ConfigFactory.parseString("pekko.actor.provider = local\n"
            + "pekko.loglevel = WARNING\n"
            + "pekko.coordinated-shutdown.exit-jvm = off\n"
            + "fencepost.partition-actor.journal-plugin-id = \"\"\n"
            + "fencepost.partition-actor.snapshot-plugin-id = \"\"\n"
            + "fencepost.partition-actor.journal-databases = 1\n"
            + "fencepost.pipeline.outbox.read-journal-plugin-id = \"" + readJournalPluginId() + "\"\n"
            + "fencepost.pipeline.outbox.durable-state-plugin-id = \"\"\n")
        .withFallback(pekkoConfig())
        .withFallback(ConfigFactory.load(loader));
    return ActorSystem.create(Behaviors.empty(), name,
        BootstrapSetup.create(Optional.of(loader), Optional.of(config), Optional.empty()));
  }

  /** Creates pekko-persistence-jdbc's tables (the script is not idempotent: see {@link #installSchemaIfMissing()}). */
  public void installSchema() {
    try (Connection c = connect()) {
      SqlScripts.run(c, dialect.createScript());
    } catch (SQLException e) {
      throw new IllegalStateException("cannot install the journal schema on [" + jdbcUrl + "]: " + e.getMessage()
          + "; check that the user may create tables", e);
    }
  }

  /** Creates the tables unless an {@code event_journal} table already exists. */
  public void installSchemaIfMissing() {
    try (Connection c = connect()) {
      if (!SqlScripts.tableExists(c, "event_journal")) {
        SqlScripts.run(c, dialect.createScript());
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot install the journal schema on [" + jdbcUrl + "]: " + e.getMessage(), e);
    }
  }

  /** Drops pekko-persistence-jdbc's tables. */
  public void dropSchema() {
    try (Connection c = connect()) {
      SqlScripts.run(c, dialect.dropScript());
    } catch (SQLException e) {
      throw new IllegalStateException("cannot drop the journal schema on [" + jdbcUrl + "]: " + e.getMessage(), e);
    }
  }

  @Override
  public String toString() {
    return "JournalDatabase(" + jdbcUrl + ", user=" + user + ", maxConnections=" + maxConnections
        + (index < 0 ? "" : ", database " + index) + ")";
  }
}
