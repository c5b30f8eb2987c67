package io.fencepost.internal;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A partition actor's state: the user's state plus what fencing needs. The user part is replaced on
 * each event; the key window is mutated in place. A snapshot's copy holds the window as a
 * {@link WindowImage} instead; recovered from one whose older keys are in segments, the window is
 * pending until they are read ({@link #pendingWindow}): the keys of the entries replayed meanwhile
 * wait in order and are added once it is installed ({@link #installWindow}).
 */
public final class PartitionState<S> {

  /** No offset stored yet: the pipeline follows {@code auto.offset.reset}. */
  public static final long NO_OFFSET = -1L;

  private S user;
  private long nextOffset;
  private KeyWindow window;
  // A snapshot's copy: the window as stored. Recovered: the window until its segments are read.
  private WindowImage windowImage;
  private PendingKeys pendingKeys;
  private String lastIncarnation;
  private long appliedRecords;
  private long droppedByKey;
  private long batches;
  private long lastWriteMillis;
  private long deadLettered;
  private final Map<String, Long> parkedKeys;
  // External calls' outcomes by idempotency key, until the offset moves past their records.
  private final Map<String, CallOutcome> callOutcomes;
  private final ReplayLedger replays = new ReplayLedger();
  // Pekko keeps the emptyState() object and starts every recovery (after a restart too) from it, so
  // that object must never change: the first event applied to it goes to a fresh copy instead.
  private final boolean pristine;

  public PartitionState(S user, long nextOffset, KeyWindow window, String lastIncarnation, long appliedRecords,
      long droppedByKey, long batches, long lastWriteMillis, long deadLettered, Map<String, Long> parked,
      Collection<CallOutcome> calls) {
    this.user = user;
    this.nextOffset = nextOffset;
    this.window = window;
    this.lastIncarnation = lastIncarnation;
    this.appliedRecords = appliedRecords;
    this.droppedByKey = droppedByKey;
    this.batches = batches;
    this.lastWriteMillis = lastWriteMillis;
    this.deadLettered = deadLettered;
    this.parkedKeys = new HashMap<>(parked);
    this.callOutcomes = new HashMap<>();
    for (CallOutcome c : calls) {
      callOutcomes.put(c.key(), c);
    }
    this.pristine = false;
  }

  private PartitionState(S user, KeyWindow window) {
    this.user = user;
    this.nextOffset = NO_OFFSET;
    this.window = window;
    this.lastIncarnation = "";
    this.parkedKeys = Map.of();
    this.callOutcomes = Map.of();
    this.pristine = true;
  }

  /** The state before any event: never mutated (see {@link #apply}). */
  public static <S> PartitionState<S> empty(S user, KeyWindow window) {
    return new PartitionState<>(user, window);
  }

  /**
   * Applies a journaled batch (live or during recovery) with the user state it produced. Mutates
   * and returns this state, except for the empty state, which is copied first.
   */
  public PartitionState<S> apply(BatchEvent e, S newUser) {
    if (pristine) {
      KeyWindow fresh = window == null ? null : new KeyWindow(window.maxKeys(), window.maxAgeMillis());
      return new PartitionState<>(user, NO_OFFSET, fresh, "", 0, 0, 0, 0, 0, Map.of(), List.of())
          .apply(e, newUser);
    }
    user = newUser;
    if (e.nextOffset() < e.fromOffset()) {
      forgetFrom(e.nextOffset());
    }
    nextOffset = nextOffsetAfter(nextOffset, e);
    if (pendingKeys != null) {
      pendingKeys.add(e.keyDigests(), e.atMillis());
    } else if (window != null) {
      long[] d = e.keyDigests();
      for (int i = 0; i < d.length; i += 2) {
        window.add(d[i], d[i + 1], e.atMillis());
      }
      window.expire(e.atMillis());
    }
    lastIncarnation = e.incarnation();
    appliedRecords += e.applied();
    droppedByKey += e.droppedByKey();
    batches++;
    deadLettered += e.deadLetters().size();
    for (long offset : e.replayed()) {
      replays.replayed(offset);
    }
    for (DeadLetterEntry d : e.deadLetters()) {
      replays.deadLettered(d.offset(), d.replayOf());
    }
    for (String key : e.unparked()) {
      parkedKeys.remove(key);
    }
    for (DeadLetterEntry d : e.deadLetters()) {
      if (d.parksKey()) {
        parkedKeys.putIfAbsent(d.key(), d.offset());
      }
    }
    for (CallOutcome c : e.calls()) {
      callOutcomes.put(c.key(), c);
    }
    if (!callOutcomes.isEmpty()) {
      long next = nextOffset;
      callOutcomes.values().removeIf(c -> c.offset() < next);
    }
    lastWriteMillis = e.atMillis();
    return this;
  }

  /**
   * A reset back to {@code offset}: the offsets from it on will hold other records (a recreated or
   * truncated log), so what this state keeps by offset from there on belongs to records of the old
   * log: their stored call outcomes, their dead letters' replayability and the keys they parked.
   */
  private void forgetFrom(long offset) {
    callOutcomes.values().removeIf(c -> c.offset() >= offset);
    parkedKeys.values().removeIf(parkedBy -> parkedBy >= offset);
    replays.forgetFrom(offset);
  }

  /**
   * The stored next offset after {@code e}: the entries only move it forward, but for an operator's
   * reset ({@code io.fencepost.OffsetReset}), the one kind of entry whose next offset lies below
   * the offset it starts at.
   */
  public static long nextOffsetAfter(long nextOffset, BatchEvent e) {
    return e.nextOffset() < e.fromOffset() ? e.nextOffset() : Math.max(nextOffset, e.nextOffset());
  }

  public S user() {
    return user;
  }

  public long nextOffset() {
    return nextOffset;
  }

  /** The window, or null when business-key deduplication is off (or its segments are being read). */
  public KeyWindow window() {
    return window;
  }

  /** How many keys the window holds (also while its segments are being read); 0 without one. */
  public int windowSize() {
    return window != null ? window.size() : windowImage != null ? windowImage.size() : 0;
  }

  /** The window as a snapshot stores it: set on a snapshot's copy and on a state read from one. */
  public WindowImage windowImage() {
    return windowImage;
  }

  /** This state, holding {@code image} as its window's stored form (a snapshot's copy, or one read). */
  public PartitionState<S> withWindowImage(WindowImage image) {
    this.windowImage = image;
    return this;
  }

  /**
   * The window stored as {@code image} is being read: until {@link #installWindow}, entries applied
   * keep their keys for it. Only for a state rebuilt from a snapshot, before any event.
   */
  public PartitionState<S> pendingWindow(WindowImage image) {
    this.window = null;
    this.windowImage = image;
    this.pendingKeys = new PendingKeys();
    return this;
  }

  /** Whether the window's segments are still being read (commands that need the window must wait). */
  public boolean windowPending() {
    return pendingKeys != null;
  }

  /** Installs the window read for a pending one, adding the keys of the entries applied meanwhile. */
  public void installWindow(KeyWindow read) {
    pendingKeys.replayInto(read);
    window = read;
    windowImage = null;
    pendingKeys = null;
  }

  public String lastIncarnation() {
    return lastIncarnation;
  }

  public long appliedRecords() {
    return appliedRecords;
  }

  public long droppedByKey() {
    return droppedByKey;
  }

  public long batches() {
    return batches;
  }

  public long lastWriteMillis() {
    return lastWriteMillis;
  }

  /** Record keys parked (per-key ordering), each with the offset of the failure that parked it. */
  public Map<String, Long> parkedKeys() {
    return Collections.unmodifiableMap(parkedKeys);
  }

  /** Journaled outcomes of external calls whose records the offset has not moved past yet, by key. */
  public Map<String, CallOutcome> callOutcomes() {
    return Collections.unmodifiableMap(callOutcomes);
  }

  /** Records dead-lettered over the partition's history. */
  public long deadLettered() {
    return deadLettered;
  }

  /** Which dead letters may still be replayed. */
  public ReplayLedger replays() {
    return replays;
  }

  /**
   * A copy for the snapshot at journal sequence number {@code sequenceNr}, independent of this
   * state: its window as {@code segments} cut it (the cost grows with the keys added since the last
   * segment, not with the window).
   */
  public PartitionState<S> copyForSnapshot(WindowSegments segments, long sequenceNr) {
    return copyWithWindow(window == null ? null : segments.image(window, sequenceNr));
  }

  /** A copy holding the whole window inline. */
  public PartitionState<S> copyForSnapshot() {
    return copyWithWindow(window == null ? null : WindowImage.inline(window));
  }

  private PartitionState<S> copyWithWindow(WindowImage image) {
    if (pendingKeys != null) {
      throw new IllegalStateException("a snapshot of a window whose segments are still being read");
    }
    PartitionState<S> copy = new PartitionState<>(user, nextOffset, null, lastIncarnation, appliedRecords,
        droppedByKey, batches, lastWriteMillis, deadLettered, parkedKeys, callOutcomes.values());
    copy.replaysFrom(this);
    return copy.withWindowImage(image);
  }

  /** Keys of entries applied while the window is pending, in order, with their entries' times. */
  private static final class PendingKeys {
    private final List<long[]> digests = new ArrayList<>();
    private final List<Long> times = new ArrayList<>();

    void add(long[] keyDigests, long atMillis) {
      digests.add(keyDigests);
      times.add(atMillis);
    }

    void replayInto(KeyWindow w) {
      for (int i = 0; i < digests.size(); i++) {
        long[] d = digests.get(i);
        long at = times.get(i);
        for (int k = 0; k < d.length; k += 2) {
          w.add(d[k], d[k + 1], at);
        }
        w.expire(at);
      }
    }
  }

  /** Takes {@code other}'s replay ledger (a state rebuilt from a snapshot's). Before any event only. */
  public PartitionState<S> replaysFrom(PartitionState<?> other) {
    ReplayLedger from = other.replays;
    replays.restore(from.replayableOffsets());
    return this;
  }
}
