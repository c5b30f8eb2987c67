package io.fencepost.internal.writepath;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongConsumer;

import io.fencepost.Inbound;
import io.fencepost.OutboxRecord;

/**
 * Effects of handlers that ran and are not journaled yet: the user state they lead to, computed on
 * the state after {@code baseBatches} journal writes, and the offsets of the records they came from.
 */
final class CarriedEffects<S> {

  final long baseBatches;
  S user;
  final List<Object> events = new ArrayList<>();
  final List<OutboxRecord> outbox = new ArrayList<>();
  // The timestamps of the records whose handlers ran into this set, for the end-to-end latency.
  private long[] timestamps = new long[16];
  private int records;
  long firstOffset = -1;
  long lastOffset = -1;

  CarriedEffects(long baseBatches, S user) {
    this.baseBatches = baseBatches;
    this.user = user;
  }

  long baseBatches() {
    return baseBatches;
  }

  S user() {
    return user;
  }

  List<Object> events() {
    return events;
  }

  List<OutboxRecord> outbox() {
    return outbox;
  }

  /** Calls {@code each} with the timestamp (epoch ms) of every record whose handler ran into this set. */
  void forEachTimestamp(LongConsumer each) {
    for (int i = 0; i < records; i++) {
      each.accept(timestamps[i]);
    }
  }

  void ran(Inbound<?> record) {
    if (records == timestamps.length) {
      timestamps = Arrays.copyOf(timestamps, records * 2);
    }
    timestamps[records++] = record.timestamp().toEpochMilli();
  }

  String describe() {
    return "offsets " + AtMostOnceEffects.range(firstOffset, lastOffset) + " (" + events.size() + " events, "
        + outbox.size() + " outbox records)";
  }
}
