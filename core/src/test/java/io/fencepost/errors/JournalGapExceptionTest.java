package io.fencepost.errors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;

import org.junit.jupiter.api.Test;

class JournalGapExceptionTest {

  private static void check(long from, List<Long> seqs) {
    JournalGapException.check("relay", "fencepost|g|t|0", from, seqs, last -> "skip to " + last);
  }

  @Test
  void contiguousEntriesFromThePositionPass() {
    check(7, List.of(7L, 8L, 9L));
    check(7, List.of());
  }

  @Test
  void aHoleRightAfterThePositionIsNamed() {
    JournalGapException e = assertThrows(JournalGapException.class, () -> check(1, List.of(5L, 6L)));
    assertEquals(1, e.firstMissing());
    assertEquals(4, e.lastMissing());
    assertEquals("[relay] journal entries [1..4] of [fencepost|g|t|0] are not readable any more (compacted or "
        + "deleted before this reader consumed them); it stops before them instead of skipping what they held. "
        + "Restore those rows from a backup, or accept the loss: skip to 4", e.getMessage());
  }

  @Test
  void aHoleInsideTheEntriesIsNamed() {
    JournalGapException e = assertThrows(JournalGapException.class, () -> check(3, List.of(3L, 4L, 9L)));
    assertEquals(5, e.firstMissing());
    assertEquals(8, e.lastMissing());
  }
}
