package io.fencepost.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.fencepost.JacksonSerializable;
import io.fencepost.Query;
import io.fencepost.testkit.PartitionActorTestKit;
import org.junit.jupiter.api.Test;

/** The ledger's handler on its own: no broker, no database (docs/testing.md). */
class LedgerActorTest {

  // snippet: ledger-unit-test
  @Test
  void aPaymentIsCreditedOnceWhateverIsRedeliveredOrReSent() {
    try (PartitionActorTestKit<Payment, Ledger, Credited> kit = PartitionActorTestKit.create(LedgerActor::new)) {
      PartitionActorTestKit.Result<Ledger, Credited> first =
          kit.send(new Payment("p-1", "m-1", 500), new Payment("p-2", "m-2", 300));
      assertEquals(Map.of("m-1", 500L, "m-2", 300L), first.state().balances());
      kit.crash();                                        // the process dies; the actor recovers
      kit.redeliver(0);                                   // the broker redelivers both records
      PartitionActorTestKit.Result<Ledger, Credited> resend =
          kit.send(new Payment("p-1", "m-1", 500));       // a producer re-sends p-1

      assertEquals(1, resend.droppedByKey());
      assertEquals(3, resend.nextOffset());
      assertEquals(List.of(), resend.events(), "nothing journaled for the re-send");
      assertEquals(Map.of("m-1", 500L, "m-2", 300L), kit.state().balances());
      assertEquals(List.of("p-1", "p-2"), kit.events().stream().map(Credited::paymentId).toList());
    }
  }
  // end-snippet: ledger-unit-test

  // snippet: query-unit-test
  @Test
  void aBalanceIsAnsweredFromTheJournaledState() {
    try (PartitionActorTestKit<Payment, Ledger, Credited> kit = PartitionActorTestKit.create(LedgerActor::new)) {
      assertEquals(0L, kit.query(new BalanceOf("m-1")));
      kit.send(new Payment("p-1", "m-1", 500), new Payment("p-2", "m-1", 250));
      kit.crash();
      assertEquals(750L, kit.query(new BalanceOf("m-1")), "answered by the recovered incarnation");
      assertEquals(0L, kit.query(new BalanceOf("m-2")));
    }
  }
  // end-snippet: query-unit-test

  @Test
  void aQueryTheLedgerDoesNotKnowFailsNamingIt() {
    record Unknown() implements Query<String>, JacksonSerializable { }
    try (PartitionActorTestKit<Payment, Ledger, Credited> kit = PartitionActorTestKit.create(LedgerActor::new)) {
      UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
          () -> kit.query(new Unknown()));
      assertEquals("io.fencepost.examples.LedgerActor answers no queries (a "
          + Unknown.class.getName() + " was asked): override onQuery to answer it", e.getMessage());
    }
  }

  @Test
  void withAnOutboxTopicEachCreditIsJournaledForTheRelay() {
    try (PartitionActorTestKit<Payment, Ledger, Credited> kit =
        PartitionActorTestKit.create(ctx -> new LedgerActor(ctx, Optional.of("credits")))) {
      kit.send(new Payment("p-1", "m-1", 500));
      kit.redeliver(0);
      assertEquals(1, kit.outbox().size());
      assertEquals("credits", kit.outbox().get(0).topic());
      assertEquals(Optional.of("m-1"), kit.outbox().get(0).key());
    }
  }
}
