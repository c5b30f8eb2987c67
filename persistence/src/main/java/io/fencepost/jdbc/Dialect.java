package io.fencepost.jdbc;

/** The SQL databases Fencepost's journal runs on. */
public enum Dialect {
  /** PostgreSQL: tests and production. */
  POSTGRES("slick.jdbc.PostgresProfile$", "org.postgresql.Driver", "org.postgresql:postgresql",
      "schema/postgres/postgres-create-schema.sql", "schema/postgres/postgres-drop-schema.sql"),
  /** Embedded H2: the zero-setup demo only. */
  H2("slick.jdbc.H2Profile$", "org.h2.Driver", "com.h2database:h2", "schema/h2/h2-create-schema.sql",
      "schema/h2/h2-drop-schema.sql");

  private final String slickProfile;
  private final String driverClass;
  private final String driverArtifact;
  private final String createScript;
  private final String dropScript;

  Dialect(String slickProfile, String driverClass, String driverArtifact, String createScript, String dropScript) {
    this.slickProfile = slickProfile;
    this.driverClass = driverClass;
    this.driverArtifact = driverArtifact;
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

  /**
   * Fails, naming the Maven artifact to add, when this database's JDBC driver is not on the
   * classpath (Fencepost's JDBC module declares the drivers optional: the service picks its own).
   */
  public void requireDriver() {
    try {
      Class.forName(driverClass, false, Dialect.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException("the " + name() + " JDBC driver " + driverClass + " is not on the classpath: "
          + "add the dependency " + driverArtifact + " (its version is in fencepost-bom)", e);
    }
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
