package io.fencepost.jdbc.internal;

import io.fencepost.annotation.InternalApi;

/** INTERNAL API: the table in which JDBC projections keep their positions, one row per projection and journal. */
@InternalApi
public final class ProjectionTables {

  /** The table's name. */
  public static final String OFFSETS = "fencepost_projection_offsets";

  /** Creates {@code fencepost_projection_offsets} unless it exists. */
  public static final String CREATE_OFFSETS = "CREATE TABLE IF NOT EXISTS fencepost_projection_offsets "
      + "(projection varchar(255) NOT NULL, persistence_id varchar(255) NOT NULL, seq bigint NOT NULL, "
      + "PRIMARY KEY (projection, persistence_id))";

  private ProjectionTables() {
  }
}
