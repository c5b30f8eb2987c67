package io.fencepost.internal;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.BatchUpdateException;
import java.sql.SQLException;

import org.junit.jupiter.api.Test;

class UniqueKeyViolationTest {

  @Test
  void findsTheUniqueViolationBehindAJdbcBatchFailureWrappedTwice() {
    BatchUpdateException batch = new BatchUpdateException("Batch entry 0 insert into event_journal", "23505", 0,
        new int[0], null);
    batch.setNextException(new SQLException("duplicate key value violates unique constraint", "23505"));
    assertTrue(UniqueKeyViolation.in(new RuntimeException("persist failed", new IllegalStateException(batch))));
  }

  @Test
  void findsItInTheChainedExceptionsOfABatch() {
    BatchUpdateException batch = new BatchUpdateException("Batch entry 0", null, 0, new int[0], null);
    batch.setNextException(new SQLException("duplicate key", "23505"));
    assertTrue(UniqueKeyViolation.in(batch));
  }

  @Test
  void otherFailuresAreNotAFence() {
    assertFalse(UniqueKeyViolation.in(new SQLException("connection refused", "08001")));
    assertFalse(UniqueKeyViolation.in(new RuntimeException("Circuit Breaker Timed out.")));
    assertFalse(UniqueKeyViolation.in(null));
  }
}
