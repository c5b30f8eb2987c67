package io.fencepost.examples;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;

/** Files of the repository, for tests that check documentation against the code. */
final class RepoFiles {

  private RepoFiles() {
  }

  /** {@code relative} resolved against the repository root (the directory holding {@code .ci}). */
  static Path of(String relative) {
    Path here = Path.of("").toAbsolutePath();
    while (here != null && !Files.exists(here.resolve(".ci"))) {
      here = here.getParent();
    }
    assertTrue(here != null, "repository root not found above " + Path.of("").toAbsolutePath());
    return here.resolve(relative);
  }
}
