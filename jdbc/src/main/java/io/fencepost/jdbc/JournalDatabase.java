package io.fencepost.jdbc;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Objects;
import java.util.Optional;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
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

  private JournalDatabase(String jdbcUrl, String user, String password, int maxConnections) {
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
  }

  /** A journal database at this URL (PostgreSQL or H2), with a pool of 8 connections. */
  public static JournalDatabase of(String jdbcUrl, String user, String password) {
    return new JournalDatabase(jdbcUrl, user, password, 8);
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
    return new JournalDatabase(jdbcUrl, user, password, maxConnections);
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
   * {@code withFallback}.
   */
  public Config pekkoConfig() {
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
    if (dialect == Dialect.POSTGRES && !jdbcUrl.contains("prepareThreshold")) {
      // PostgreSQL's driver sends a statement's first four executions as unnamed ones, whose results
      // come as text: a bytea column as hex, twice its size, decoded on the client. Recovery is such
      // a first execution on every connection: a 24 MB snapshot (a million window keys) took 640 ms
      // to fetch as text and 215 ms in binary, measured here. -1 prepares every statement on its
      // first execution, so results come binary from the start. A URL that sets prepareThreshold
      // itself (0 behind PgBouncer's transaction pooling, say) keeps its value.
      db = db.withValue("db.properties.prepareThreshold", ConfigValueFactory.fromAnyRef("-1"));
    }
    String plugins = String.join("\n",
        "pekko.persistence.journal.plugin = \"jdbc-journal\"",
        "pekko.persistence.snapshot-store.plugin = \"jdbc-snapshot-store\"",
        "pekko.persistence.state.plugin = \"jdbc-durable-state-store\"",
        "jdbc-journal.use-shared-db = \"slick\"",
        "jdbc-snapshot-store.use-shared-db = \"slick\"",
        "jdbc-read-journal.use-shared-db = \"slick\"",
        "jdbc-durable-state-store.use-shared-db = \"slick\"",
        // After an outage, try the database again within seconds: Pekko's defaults keep the
        // journal's breaker open 30 s and the snapshot store's 60 s (recovery reads snapshots first).
        "jdbc-journal.circuit-breaker.reset-timeout = 5s",
        "jdbc-snapshot-store.circuit-breaker.reset-timeout = 5s");
    return ConfigFactory.parseString(plugins)
        .withValue("pekko-persistence-jdbc.shared-databases.slick", db.root());
  }

  /**
   * A local actor system on this database (no cluster, no remoting), with classes and configuration
   * from {@code loader}: for tools that read or write a journal next to a running service, which
   * must neither bind the service's port nor join its cluster. The service's configuration supplies
   * its serializers; the journal is this one, whatever plugin ids that configuration names.
   */
  public ActorSystem<Void> localSystem(String name, ClassLoader loader) {
    Config config = ConfigFactory.parseString("pekko.actor.provider = local\n"
            + "pekko.loglevel = WARNING\n"
            + "pekko.coordinated-shutdown.exit-jvm = off\n"
            + "fencepost.partition-actor.journal-plugin-id = \"\"\n"
            + "fencepost.partition-actor.snapshot-plugin-id = \"\"\n")
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
    return "JournalDatabase(" + jdbcUrl + ", user=" + user + ", maxConnections=" + maxConnections + ")";
  }
}
