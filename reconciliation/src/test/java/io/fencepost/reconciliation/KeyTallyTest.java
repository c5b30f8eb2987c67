package io.fencepost.reconciliation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;

import io.fencepost.BusinessKeyDigest;
import org.junit.jupiter.api.Test;

/** Keys meet the journal's digests: counted by the digest the key window stores. */
class KeyTallyTest {

  private record Row(long hi, long lo, int bucket, int copies, int applied, int dead) {
  }

  private static List<Row> rows(KeyTally tally) {
    List<Row> rows = new ArrayList<>();
    tally.counts.forEach((hi, lo, b, copies, applied, dead) -> rows.add(new Row(hi, lo, b, copies, applied, dead)));
    return rows;
  }

  @Test
  void anInputKeyIsAppliedByTheDigestTheJournalStoresForIt() {
    long[] journaled = new long[2];
    new BusinessKeyDigest().digest("pay-é-1", journaled);
    KeyTally tally = new KeyTally();
    tally.input("pay-é-1", 0);
    tally.input("pay-é-1", 3);   // a producer duplicate: its first copy's bucket sticks
    tally.appliedDigests(journaled);
    assertEquals(List.of(new Row(journaled[0], journaled[1], 0, 2, 1, 0)), rows(tally));
    assertEquals("pay-é-1", tally.sample(journaled[0], journaled[1]));
  }

  @Test
  void aKeyWithAnUnpairedSurrogateIsCountedAsItsUtf8FormReads() {
    String malformed = "pay-\uD800";
    assertThrows(IllegalArgumentException.class, () -> new BusinessKeyDigest().digest(malformed, new long[2]),
        "the key window refuses such a key");
    KeyTally tally = new KeyTally();
    int slot = tally.input(malformed, 0);
    tally.counts.markDead(slot);   // its record was dead-lettered by the pipeline
    long[] asRead = new long[2];
    new BusinessKeyDigest().digest("pay-?", asRead);
    assertEquals(List.of(new Row(asRead[0], asRead[1], 0, 1, 0, 1)), rows(tally), "counted, as dead-lettered");
  }
}
