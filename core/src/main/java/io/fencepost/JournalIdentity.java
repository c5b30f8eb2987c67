package io.fencepost;

import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * What a journal database records about its place in a deployment whose partitions' histories are
 * spread over several databases ({@code journal-databases}): database {@code index} of {@code count}
 * of {@code deployment}. {@code moving}: a move of histories to that layout has begun and not
 * finished, and no node may start on any list meanwhile.
 *
 * <p>Each database holds it twice: in a table of its own, which the list a node is given is checked
 * against before the node starts, and as the one entry of persistence id {@value #PERSISTENCE_ID} in
 * its journal, which each pipeline reads back through the journal plugin it will write with.
 */
public record JournalIdentity(String deployment, int index, int count, boolean moving) {

  /** The persistence id of the journal entry that holds a database's identity. */
  public static final String PERSISTENCE_ID = "fencepost-identity";
  private static final String FORMAT = "fencepost-identity/1";

  public JournalIdentity(String deployment, int index, int count) {
    this(deployment, index, count, false);
  }

  /** The same layout, settled or moving. */
  public JournalIdentity moving(boolean value) {
    return new JournalIdentity(deployment, index, count, value);
  }

  /** The journal entry's payload (stored with Pekko's byte-array serializer). */
  public byte[] toBytes() {
    return String.join("|", FORMAT, deployment, Integer.toString(index), Integer.toString(count), moving ? "1" : "0")
        .getBytes(StandardCharsets.UTF_8);
  }

  /** The identity a journal entry holds, or empty when it holds none. */
  public static Optional<JournalIdentity> fromBytes(Object payload) {
    if (!(payload instanceof byte[] bytes)) {
      return Optional.empty();
    }
    String[] parts = new String(bytes, StandardCharsets.UTF_8).split("\\|", -1);
    if (parts.length != 5 || !parts[0].equals(FORMAT)) {
      return Optional.empty();
    }
    try {
      return Optional.of(new JournalIdentity(parts[1], Integer.parseInt(parts[2]), Integer.parseInt(parts[3]),
          parts[4].equals("1")));
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }

  @Override
  public String toString() {
    return (moving ? "is being moved to database " : "says it is database ") + index + " of " + count
        + " of deployment [" + deployment + "]";
  }
}
