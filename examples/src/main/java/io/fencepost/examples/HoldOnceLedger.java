package io.fencepost.examples;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;

/**
 * A fault-injection hook for the multi-process fencing test, on only when the node runs with
 * {@code -Dfencepost.examples.hold-dir=DIR}: the first node whose handler meets a payment whose id
 * starts with {@code hold-} claims it (creates {@code DIR/claimed-<id>}), prints
 * {@code HOLDING <id>} and blocks inside the handler, between the record and its journal write,
 * until {@code DIR/release-<id>} exists. Every other node (the claim exists) handles it at once.
 * Otherwise the plain {@link LedgerActor}.
 */
public final class HoldOnceLedger extends PartitionActor<Payment, Ledger, Credited> {

  public static final String HOLD_DIR_PROPERTY = "fencepost.examples.hold-dir";

  private final LedgerActor ledger;
  private final Path dir;

  private HoldOnceLedger(PartitionContext context, Optional<String> outboxTopic, Path dir) {
    super(context);
    this.ledger = new LedgerActor(context, outboxTopic);
    this.dir = dir;
  }

  /** The ledger actor, held as above when the system property is set. */
  static PartitionActor<Payment, Ledger, Credited> create(PartitionContext context, Optional<String> outboxTopic) {
    String dir = System.getProperty(HOLD_DIR_PROPERTY);
    return dir == null ? new LedgerActor(context, outboxTopic) : new HoldOnceLedger(context, outboxTopic, Path.of(dir));
  }

  @Override
  protected Ledger emptyState() {
    return ledger.emptyState();
  }

  @Override
  protected Effects<Credited> onRecord(Ledger state, Inbound<Payment> in) {
    String id = in.value().paymentId();
    if (id.startsWith("hold-") && claim(id)) {
      System.out.println("HOLDING " + id + " at offset " + in.offset() + " of " + in.partition().shortName());
      System.out.flush();
      while (!Files.exists(dir.resolve("release-" + id))) {
        try {
          Thread.sleep(20);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
      System.out.println("RELEASED " + id);
      System.out.flush();
    }
    return ledger.onRecord(state, in);
  }

  private boolean claim(String id) {
    try {
      Files.createFile(dir.resolve("claimed-" + id));
      return true;
    } catch (FileAlreadyExistsException e) {
      return false;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  protected Ledger applyEvent(Ledger state, Credited e) {
    return ledger.applyEvent(state, e);
  }

  @Override
  protected Optional<String> businessKey(Inbound<Payment> in) {
    return ledger.businessKey(in);
  }
}
