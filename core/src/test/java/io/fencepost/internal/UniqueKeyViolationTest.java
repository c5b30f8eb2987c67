package io.fencepost.internal;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.BatchUpdateException;
import java.sql.SQLException;

import org.junit.jupiter.api.Test;

class UniqueKeyViolationTest {

  private static final String PID = "fencepost|ledger|payments|0";
  private static final String DETAIL = "ERROR: duplicate key value violates unique constraint \"event_journal_pkey\"\n"
      + "  Detail: Key (persistence_id, sequence_number)=(" + PID + ", 3) already exists.";

  @Test
  void findsTheRefusedKeyBehindAJdbcBatchFailureWrappedTwice() {
    BatchUpdateException batch = new BatchUpdateException("Batch entry 0 insert into event_journal was aborted: "
        + DETAIL, "23505", 0, new int[0], null);
    assertTrue(UniqueKeyViolation.in(new RuntimeException("persist failed", new IllegalStateException(batch)), PID));
  }

  @Test
  void findsItInTheChainedExceptionsOfABatch() {
    BatchUpdateException batch = new BatchUpdateException("Batch entry 0", null, 0, new int[0], null);
    batch.setNextException(new SQLException(DETAIL, "23505"));
    assertTrue(UniqueKeyViolation.in(batch, PID));
  }

  @Test
  void anotherActorsRefusedKeyInTheSameTransactionIsNotOurFence() {
    assertFalse(UniqueKeyViolation.in(new SQLException(DETAIL, "23505"), "fencepost|ledger|payments|1"));
    assertFalse(UniqueKeyViolation.in(new SQLException(DETAIL, "23505"), "fencepost|ledger|payments|"));
  }

  @Test
  void otherFailuresAreNotAFence() {
    assertFalse(UniqueKeyViolation.in(new SQLException("connection refused " + PID, "08001"), PID));
    assertFalse(UniqueKeyViolation.in(new RuntimeException("Circuit Breaker Timed out."), PID));
    assertFalse(UniqueKeyViolation.in(null, PID));
  }
}
