package io.fencepost.jdbc;

/** The SQL databases Fencepost's journal runs on. */
public enum Dialect {
  /** PostgreSQL: tests and production. */
  POSTGRES("slick.jdbc.PostgresProfile$", "org.postgresql.Driver", "schema/postgres/postgres-create-schema.sql",
      "schema/postgres/postgres-drop-schema.sql"),
  /** Embedded H2: the zero-setup demo only. */
  H2("slick.jdbc.H2Profile$", "org.h2.Driver", "schema/h2/h2-create-schema.sql", "schema/h2/h2-drop-schema.sql");

  private final String slickProfile;
  private final String driverClass;
  private final String createScript;
  private final String dropScript;

  Dialect(String slickProfile, String driverClass, String createScript, String dropScript) {
    this.slickProfile = slickProfile;
    this.driverClass = driverClass;
    this.createScript = createScript;
    this.dropScript = dropScript;
  }

  /** The Slick profile pekko-persistence-jdbc uses for this database. */
  public String slickProfile() {
    return slickProfile;
  }

  /** The JDBC driver class name. */
  public String driverClass() {
    return driverClass;
  }

  /** Classpath resource of pekko-persistence-jdbc's schema creation script. */
  public String createScript() {
    return createScript;
  }

  /** Classpath resource of pekko-persistence-jdbc's schema drop script. */
  public String dropScript() {
    return dropScript;
  }

  /** The dialect of a JDBC URL ({@code jdbc:postgresql:} or {@code jdbc:h2:}). */
  public static Dialect ofUrl(String jdbcUrl) {
    if (jdbcUrl != null && jdbcUrl.startsWith("jdbc:postgresql:")) {
      return POSTGRES;
    }
    if (jdbcUrl != null && jdbcUrl.startsWith("jdbc:h2:")) {
      return H2;
    }
    throw new IllegalArgumentException("JDBC URL must start with jdbc:postgresql: or jdbc:h2:, was [" + jdbcUrl + "]");
  }
}
