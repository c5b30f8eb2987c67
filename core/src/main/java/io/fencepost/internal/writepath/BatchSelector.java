package io.fencepost.internal.writepath;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;

import io.fencepost.BatchOutcome;
import io.fencepost.DeadLetter;
import io.fencepost.Inbound;
import io.fencepost.PartitionActorSettings;
import io.fencepost.PartitionId;
import io.fencepost.errors.FatalException;
import io.fencepost.errors.FencepostException;
import io.fencepost.errors.HandlerFailedException;
import io.fencepost.errors.OffsetGapException;
import io.fencepost.internal.DeadLetterEntry;
import io.fencepost.internal.KeyDigest;
import io.fencepost.internal.KeyWindow;
import io.fencepost.internal.PartitionState;
import org.slf4j.Logger;

/**
 * Decides what of a batch is new: drops redeliveries (below the stored offset) and business-key
 * duplicates, orders dead letters in, parks records behind a parked key, and refuses a batch that
 * would skip offsets. Runs on the partition actor's thread; holds no state between batches but the
 * partition last checked.
 */
public final class BatchSelector<V> {

  private final PartitionId partition;
  private final PartitionActorSettings settings;
  private final UserHandlers<V, ?, ?> handlers;
  private final Logger log;
  private final KeyDigest digest = new KeyDigest();
  private final long[] digestOut = new long[2];
  // The PartitionId instance the last batch's records carried (they share one per pipeline stream).
  private PartitionId lastCheckedPartition;

  BatchSelector(PartitionId partition, PartitionActorSettings settings, UserHandlers<V, ?, ?> handlers, Logger log) {
    this.partition = partition;
    this.settings = settings;
    this.handlers = handlers;
    this.log = log;
  }

  /** The records of a batch after dropping redeliveries, key duplicates and dead letters. */
  public static final class Selection<V> {
    final List<Inbound<V>> fresh = new ArrayList<>();
    /** The fresh records' key digests as (high, low) pairs; {@link #freshDigestCount} longs are used. */
    private final long[] freshDigests;
    private int freshDigestCount;

    Selection(int records) {
      freshDigests = new long[records * 2];
    }
    final List<DeadLetterEntry> deadLetters = new ArrayList<>();
    final List<String> unparked = new ArrayList<>();
    final List<Long> toPark = new ArrayList<>();
    /** Offsets of dead letters whose replay this batch applies or drops by key. */
    final List<Long> replayed = new ArrayList<>();
    /** Offsets of replays dropped: their dead letters may not be replayed (again). */
    final List<Long> droppedReplays = new ArrayList<>();
    long nextOffset;
    int droppedRedelivery;
    int droppedByKey;

    /** At most one pair per record of the batch: the array was sized for that. */
    void addFreshDigest(long hi, long lo) {
      freshDigests[freshDigestCount++] = hi;
      freshDigests[freshDigestCount++] = lo;
    }

    /** The fresh records' key digests, exactly. */
    long[] freshDigests() {
      return Arrays.copyOf(freshDigests, freshDigestCount);
    }

    /** The records whose handlers run, in offset order. */
    public List<Inbound<V>> fresh() {
      return fresh;
    }

    /** The partition's next offset once the batch is applied. */
    public long nextOffset() {
      return nextOffset;
    }

    /** The reply to a batch whose every record was a redelivery: acknowledged without a write. */
    public BatchOutcome.Applied acknowledged(PartitionId partition) {
      return new BatchOutcome.Applied(partition, nextOffset, 0, droppedRedelivery, droppedByKey, false, 0, 0);
    }
  }

  /**
   * Throws {@link OffsetGapException} when the batch lacks an offset between the stored next offset
   * and {@code coveredFrom} (see {@link io.fencepost.PartitionCommand.ApplyBatch}): applying it would move the
   * fencing offset over records nobody applied. A partition without a stored offset starts at its
   * first batch's first offset when the sender vouches for it ({@code coveredFrom} at or below it).
   */
  @SuppressWarnings("unchecked")
  Selection<V> select(PartitionState<?> state, List<Inbound<?>> records, List<DeadLetter> deadLetters,
      long coveredFrom) {
    // Usually a batch is records in ascending offsets without dead letters: taken as it is. Otherwise
    // ordered by offset, a dead letter replacing the record at its offset.
    boolean ascending = deadLetters.isEmpty();
    long previous = Long.MIN_VALUE;
    for (Inbound<?> raw : records) {
      checkPartition(raw.partition(), "record", raw.offset());
      ascending &= raw.offset() > previous;
      previous = raw.offset();
    }
    Collection<?> ordered = records;
    if (!ascending) {
      TreeMap<Long, Object> byOffset = new TreeMap<>();
      for (Inbound<?> raw : records) {
        byOffset.put(raw.offset(), raw);
      }
      for (DeadLetter d : deadLetters) {
        checkPartition(d.partition(), "dead letter", d.offset());
        byOffset.put(d.offset(), d);
      }
      ordered = byOffset.values();
    }
    Selection<V> sel = new Selection<>(records.size());
    sel.nextOffset = state.nextOffset();
    Set<Digest> batchKeys = new HashSet<>(Math.max(16, records.size() * 2));
    Set<Long> batchReplays = new HashSet<>();
    KeyWindow window = state.window();
    Map<String, Long> parked = settings.perKeyOrdering() ? new HashMap<>(state.parkedKeys())
        : Map.of();
    long expected = state.nextOffset();   // the next offset the batch must hold, unless vouched for
    for (Object item : ordered) {
      long offset = item instanceof DeadLetter d ? d.offset() : ((Inbound<?>) item).offset();
      if (sel.nextOffset != PartitionState.NO_OFFSET && offset < sel.nextOffset) {
        sel.droppedRedelivery++;
        continue;
      }
      if (expected == PartitionState.NO_OFFSET ? coveredFrom > offset : offset > expected && expected < coveredFrom) {
        throw new OffsetGapException(partition.qualifiedName(), state.nextOffset(),
            expected == PartitionState.NO_OFFSET ? 0 : expected, offset);
      }
      expected = offset + 1;
      if (item instanceof DeadLetter d) {
        boolean parksKey = settings.perKeyOrdering() && !d.parked() && d.key().isPresent();
        if (parksKey) {
          String k = d.key().get();
          if (parked.containsKey(k) && d.replayOf().isPresent() && d.replayOf().getAsLong() == parked.get(k)) {
            // The replay of the record that parked K failed again: K stays parked, now behind this
            // new dead letter (the one a later replay will carry).
            sel.unparked.add(k);
            parked.put(k, d.offset());
          } else {
            parked.putIfAbsent(k, d.offset());
          }
        }
        sel.deadLetters.add(new DeadLetterEntry(d.offset(), d.key().orElse(""), d.errorClass(), d.errorMessage(),
            d.attempts(), d.parked(), parksKey, d.replayOf().orElse(-1)));
        sel.nextOffset = d.offset() + 1;
        continue;
      }
      Inbound<V> record = (Inbound<V>) item;
      long replayOf = -1;
      OptionalLong of = Inbound.replayedOffset(partition, record.header(Inbound.REPLAY_OF_HEADER).orElse(null));
      if (of.isPresent()) {
        // Only a dead letter the journal holds, and only once: not one replayed before, nor one another
        // owner applied after all, nor another consumer group's (never replayable here).
        if (!state.replays().replayable(of.getAsLong()) || !batchReplays.add(of.getAsLong())) {
          sel.droppedRedelivery++;
          sel.droppedReplays.add(record.offset());
          sel.nextOffset = record.offset() + 1;
          continue;
        }
        replayOf = of.getAsLong();
      }
      if (!parked.isEmpty() && record.key().isPresent() && parked.containsKey(record.key().get())) {
        String k = record.key().get();
        long parkedBy = parked.get(k);
        if (replayOf(record) == parkedBy) {
          // The failed record itself is back (replayed): the key is free again, in order.
          parked.remove(k);
          sel.unparked.add(k);
        } else {
          sel.toPark.add(record.offset());
          continue;
        }
      }
      Optional<String> key;
      try {
        key = window == null ? Optional.empty() : handlers.businessKey(record);
      } catch (RuntimeException e) {
        // Nothing of the batch is applied; the pipeline retries or dead-letters this record.
        throw handlerFailure(partition.qualifiedName(), record.offset(), e);
      }
      if (key.isPresent()) {
        try {
          digest.digest(key.get(), digestOut);
        } catch (IllegalArgumentException e) {
          throw handlerFailure(partition.qualifiedName(), record.offset(), e);   // a key it cannot tell apart
        }
        Digest d = new Digest(digestOut[0], digestOut[1]);
        if (window.contains(d.hi, d.lo) || !batchKeys.add(d)) {
          if (replayOf >= 0) {
            sel.replayed.add(replayOf);
          }
          sel.droppedByKey++;
          sel.nextOffset = record.offset() + 1;
          log.debug("[{}] offset [{}] dropped: business key [{}] already applied", partition.shortName(),
              record.offset(), key.get());
          continue;
        }
        sel.addFreshDigest(d.hi, d.lo);
      }
      if (replayOf >= 0) {
        sel.replayed.add(replayOf);
      }
      sel.fresh.add(record);
      sel.nextOffset = record.offset() + 1;
    }
    return sel;
  }

  private record Digest(long hi, long lo) {
  }

  /** Fails on an item of another partition; compares each distinct PartitionId instance once. */
  private void checkPartition(PartitionId of, String what, long offset) {
    if (of == lastCheckedPartition) {
      return;
    }
    if (!of.equals(partition)) {
      throw new FatalException("[" + partition.qualifiedName() + "] received a " + what + " of another partition ["
          + of.qualifiedName() + "] at offset [" + offset + "]; the pipeline routes wrongly");
    }
    lastCheckedPartition = of;
  }

  /** The original offset a replayed record stood at ({@code fencepost.replay-of} header), or -1. */
  private static long replayOf(Inbound<?> record) {
    return record.replayOf().orElse(-1L);
  }

  /** A user hook threw for one record: retriable only when it said so with a retriable FencepostException. */
  static HandlerFailedException handlerFailure(String partition, long offset, RuntimeException e) {
    boolean retriable = e instanceof FencepostException fe && fe.isRetriable();
    return new HandlerFailedException(partition, offset, retriable, e.getClass().getName(), e.getMessage(), e);
  }
}
