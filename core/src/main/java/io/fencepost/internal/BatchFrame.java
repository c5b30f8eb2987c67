package io.fencepost.internal;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import com.typesafe.config.Config;
import io.fencepost.OutboxRecord;

/**
 * The journal frame of a {@link BatchEvent} (manifest {@code B}, format version 1): the whole batch
 * encoded once, in one buffer sized from the previous frame.
 *
 * <p>The user's events still go through the serializer the application binds to their class, one
 * payload per event, but each distinct class's serializer and manifest are resolved and written once
 * per frame, in a class table the events point into. Outbox topics are a table too. Counts, lengths
 * and offsets are varints; key digests are fixed 16-byte pairs.
 *
 * <pre>
 * format version (one byte: 1)
 * incarnation, fromOffset, nextOffset, atMillis, applied, droppedByKey
 * class table:  count, (serializer id, manifest) ...
 * events:       count, (class table index, payload) ...
 * dead letters: count, (offset, key, error class, message, attempts, flags, replayOf) ...
 * unparked:     count, key ...
 * outbox:       topic count, topic ..., record count, (topic index, has key, [key], value) ...
 * calls:        count, (offset, key, outcome) ...
 * replayed:     count, offset ...
 * digests:      count, (high, low) ...
 * </pre>
 *
 * The key digests come last because they are random: PostgreSQL compresses a large value (pglz)
 * only when it finds something to compress within its first KiB, and a frame that began with
 * digests was stored uncompressed (73 instead of about 30 bytes per record, measured).
 *
 * Thread-safe: a serializer is shared by the journal plugin's threads.
 */
final class BatchFrame {

  private static final int PARKED = 1;
  private static final int PARKS_KEY = 2;
  /** The largest size hint kept: one huge batch must not make every later frame start huge. */
  private static final int MAX_HINT = 256 * 1024;

  private final NestedSerialization nested;
  private final JacksonEvents jackson;
  /** The size of the last frame written: the next one's first guess, so a frame rarely grows. */
  private volatile int sizeHint = 256;

  BatchFrame(NestedSerialization nested, Config config) {
    this.nested = nested;
    this.jackson = new JacksonEvents(config);
  }

  byte[] write(BatchEvent e) {
    int hint = sizeHint;
    FrameOutput out = new FrameOutput(hint + (hint >> 3));
    out.writeByte(BinarySerializer.FORMAT_VERSION);
    out.writeString(e.incarnation());
    out.writeSignedVarLong(e.fromOffset());
    out.writeSignedVarLong(e.nextOffset());
    out.writeLong(e.atMillis());
    out.writeCount(e.applied());
    out.writeCount(e.droppedByKey());
    writeEvents(out, e.events(), hint);
    out.writeCount(e.deadLetters().size());
    for (DeadLetterEntry dead : e.deadLetters()) {
      out.writeSignedVarLong(dead.offset());
      out.writeString(dead.key());
      out.writeString(dead.errorClass());
      out.writeString(dead.journaledMessage());
      out.writeCount(dead.attempts());
      out.writeByte((dead.parked() ? PARKED : 0) | (dead.parksKey() ? PARKS_KEY : 0));
      out.writeSignedVarLong(dead.replayOf());
    }
    out.writeCount(e.unparked().size());
    for (String key : e.unparked()) {
      out.writeString(key);
    }
    writeOutbox(out, e.outbox());
    out.writeCount(e.calls().size());
    for (CallOutcome c : e.calls()) {
      out.writeSignedVarLong(c.offset());
      out.writeString(c.key());
      out.writeString(c.outcome());
    }
    long[] replayed = e.replayed();
    out.writeCount(replayed.length);
    for (long offset : replayed) {
      out.writeSignedVarLong(offset);
    }
    long[] digests = e.keyDigests();
    out.writeCount(digests.length / 2);
    for (long v : digests) {
      out.writeLong(v);
    }
    sizeHint = Math.min(MAX_HINT, out.size());
    return out.toByteArray();
  }

  /**
   * The class table, then each event as its entry's index and its payload. Events of a class bound
   * to Pekko's Jackson serializers are encoded together ({@link JacksonEvents}); the others one by
   * one, through the serializer bound to their class.
   */
  private void writeEvents(FrameOutput out, List<Object> events, int sizeHint) {
    int n = events.size();
    List<NestedSerialization.Encoding> table = new ArrayList<>(2);
    int[] entry = new int[n];
    byte[][] payloads = new byte[n][];
    int[] starts = new int[n];
    int[] lengths = new int[n];
    Class<?> lastClass = null;
    int lastEntry = -1;
    try (JacksonEvents.Frame encoded = jackson.frame(sizeHint)) {
      for (int i = 0; i < n; i++) {
        Object event = events.get(i);   // never null: BatchEvent copies its events with List.copyOf
        if (event.getClass() != lastClass) {
          lastClass = event.getClass();
          lastEntry = entryOf(table, event, lastClass);
        } else if (!table.get(lastEntry).byClass()) {
          lastEntry = entryOf(table, event, lastClass);
        }
        entry[i] = lastEntry;
        NestedSerialization.Encoding encoding = table.get(lastEntry);
        if (!encoded.write(encoding, event)) {
          payloads[i] = encoding.serializer().toBinary(event);
        } else if (encoded.compressed() != null) {
          payloads[i] = encoded.compressed();
        } else {
          starts[i] = encoded.start();
          lengths[i] = encoded.length();
        }
      }
      out.writeCount(table.size());
      for (NestedSerialization.Encoding encoding : table) {
        out.writeInt(encoding.id());
        out.writeString(encoding.manifest());
      }
      out.writeCount(n);
      byte[] encodedBytes = encoded.array();
      for (int i = 0; i < n; i++) {
        out.writeCount(entry[i]);
        if (payloads[i] != null) {
          out.writeBytes(payloads[i]);
        } else {
          out.writeBytes(encodedBytes, starts[i], lengths[i]);
        }
      }
    }
  }

  /** The table entry for {@code event}, added if new; a class's entry is looked up by class when its manifest is. */
  private int entryOf(List<NestedSerialization.Encoding> table, Object event, Class<?> type) {
    for (int i = 0; i < table.size(); i++) {
      NestedSerialization.Encoding known = table.get(i);
      if (known.byClass() && known.type() == type) {
        return i;
      }
    }
    NestedSerialization.Encoding encoding = nested.encodingOf(event);
    if (!encoding.byClass()) {
      for (int i = 0; i < table.size(); i++) {
        NestedSerialization.Encoding known = table.get(i);
        if (!known.byClass() && known.serializer() == encoding.serializer()
            && known.manifest().equals(encoding.manifest())) {
          return i;
        }
      }
    }
    table.add(encoding);
    return table.size() - 1;
  }

  private static void writeOutbox(FrameOutput out, List<OutboxRecord> outbox) {
    List<String> topics = new ArrayList<>(1);
    int[] topicOf = new int[outbox.size()];
    for (int i = 0; i < outbox.size(); i++) {
      String topic = outbox.get(i).topic();
      int t = topics.indexOf(topic);
      if (t < 0) {
        topics.add(topic);
        t = topics.size() - 1;
      }
      topicOf[i] = t;
    }
    out.writeCount(topics.size());
    for (String topic : topics) {
      out.writeString(topic);
    }
    out.writeCount(outbox.size());
    for (int i = 0; i < outbox.size(); i++) {
      OutboxRecord r = outbox.get(i);
      out.writeCount(topicOf[i]);
      if (r.key().isPresent()) {
        out.writeByte(1);
        out.writeString(r.key().get());
      } else {
        out.writeByte(0);
      }
      out.writeBytes(r.value());
    }
  }

  /** Reads a frame whose format version (its first byte) the caller checked. */
  BatchEvent read(byte[] bytes) throws IOException {
    FrameInput in = new FrameInput(bytes);
    in.readByte();
    String incarnation = in.readString();
    long from = in.readSignedVarLong();
    long next = in.readSignedVarLong();
    long at = in.readLong();
    int applied = in.readVarInt();
    int droppedByKey = in.readVarInt();
    List<Object> events = readEvents(in);
    int deadCount = in.readCount();
    List<DeadLetterEntry> dead = new ArrayList<>(deadCount);
    for (int i = 0; i < deadCount; i++) {
      long offset = in.readSignedVarLong();
      String key = in.readString();
      String errorClass = in.readString();
      String message = in.readString();
      int attempts = in.readVarInt();
      int flags = in.readByte();
      if ((flags & ~(PARKED | PARKS_KEY)) != 0) {
        throw new IOException("dead letter " + i + " has unknown flags " + flags);
      }
      dead.add(new DeadLetterEntry(offset, key, errorClass, message, attempts, (flags & PARKED) != 0,
          (flags & PARKS_KEY) != 0, in.readSignedVarLong()));
    }
    int unparkedCount = in.readCount();
    List<String> unparked = new ArrayList<>(unparkedCount);
    for (int i = 0; i < unparkedCount; i++) {
      unparked.add(in.readString());
    }
    List<OutboxRecord> outbox = readOutbox(in);
    int callCount = in.readCount();
    List<CallOutcome> calls = new ArrayList<>(callCount);
    for (int i = 0; i < callCount; i++) {
      calls.add(new CallOutcome(in.readSignedVarLong(), in.readString(), in.readString()));
    }
    long[] replayed = new long[in.readCount()];
    for (int i = 0; i < replayed.length; i++) {
      replayed[i] = in.readSignedVarLong();
    }
    int pairs = in.readCount(16);
    long[] digests = new long[pairs * 2];
    for (int i = 0; i < digests.length; i++) {
      digests[i] = in.readLong();
    }
    if (!in.atEnd()) {
      throw new IOException("bytes left after the batch frame's last field");
    }
    return new BatchEvent(incarnation, from, next, at, events, digests, applied, droppedByKey, dead, unparked, outbox,
        calls, replayed);
  }

  private List<Object> readEvents(FrameInput in) throws IOException {
    int entries = in.readCount();
    int[] ids = new int[entries];
    String[] manifests = new String[entries];
    for (int i = 0; i < entries; i++) {
      ids[i] = in.readInt();
      manifests[i] = in.readString();
    }
    int n = in.readCount();
    List<Object> events = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      int entry = in.readVarInt();
      if (entry >= entries) {
        throw new IOException("event " + i + " names class table entry " + entry + " of " + entries);
      }
      events.add(nested.deserialize(in.readBytes(), ids[entry], manifests[entry]));
    }
    return events;
  }

  private static List<OutboxRecord> readOutbox(FrameInput in) throws IOException {
    String[] topics = new String[in.readCount()];
    for (int i = 0; i < topics.length; i++) {
      topics[i] = in.readString();
    }
    int n = in.readCount();
    List<OutboxRecord> outbox = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      int t = in.readVarInt();
      if (t >= topics.length) {
        throw new IOException("outbox record " + i + " names topic " + t + " of " + topics.length);
      }
      Optional<String> key = in.readBoolean() ? Optional.of(in.readString()) : Optional.empty();
      outbox.add(new OutboxRecord(topics[t], key, in.readBytes()));
    }
    return outbox;
  }
}
