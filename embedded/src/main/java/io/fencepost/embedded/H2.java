package io.fencepost.embedded;

import java.nio.file.Path;
import java.util.UUID;

import io.fencepost.jdbc.JournalDatabase;

/** Embedded H2 journals: the zero-setup path for the demo and fast unit tests. */
public final class H2 {

  private H2() {
  }

  /** A fresh in-memory database with the journal schema installed. */
  public static JournalDatabase inMemory() {
    JournalDatabase db = JournalDatabase.h2Memory("fp_" + UUID.randomUUID().toString().replace("-", ""));
    db.installSchema();
    return db;
  }

  /** A file database (created if absent) with the journal schema installed if missing. */
  public static JournalDatabase file(Path file) {
    JournalDatabase db = JournalDatabase.h2File(file);
    db.installSchemaIfMissing();
    return db;
  }
}
