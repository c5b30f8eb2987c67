package io.fencepost.internal;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import io.fencepost.OutboxRecord;
import org.apache.pekko.actor.ExtendedActorSystem;

/**
 * Binary serializer for Fencepost's journal event ({@link BatchEvent}) and snapshot
 * ({@link PartitionState}). The user's events and state inside them are serialized by whatever
 * serializer the application binds to their classes (e.g. {@code jackson-cbor}), so this format
 * never needs to know user types. Versioned by manifest ({@code B1}..{@code B7}, {@code S1}..{@code S6}):
 * older versions are still read. Batches are written as {@link BatchFrame}s ({@code B7}), or as
 * {@code B6} while {@code fencepost.serialization.batch-format = 6} (a rolling upgrade's first step).
 */
public final class FencepostSerializer extends BinarySerializer {

  /** Registered in core's reference.conf; never reuse or change. */
  public static final int IDENTIFIER = 741_100;

  private static final String BATCH_V1 = "B1";
  private static final String BATCH_V2 = "B2";
  private static final String BATCH_V3 = "B3";
  private static final String BATCH_V4 = "B4";
  // B5/S5: record keys (dead letters, parked and unparked keys) with an int length: a Kafka key may
  // exceed writeUTF's 64 KiB.
  private static final String BATCH_V5 = "B5";
  // B6/S6: which dead letters may still be replayed (ReplayLedger).
  private static final String BATCH_V6 = "B6";
  // B7: one frame per batch, each event class's serializer and manifest once (BatchFrame).
  private static final String BATCH_V7 = "B7";
  static final String BATCH_FORMAT_KEY = "fencepost.serialization.batch-format";
  private static final String STATE_V1 = "S1";
  private static final String STATE_V2 = "S2";
  private static final String STATE_V3 = "S3";
  private static final String STATE_V4 = "S4";
  private static final String STATE_V5 = "S5";
  private static final String STATE_V6 = "S6";

  private final BatchFrame frame = new BatchFrame(nested);
  private final boolean writeFrames;

  public FencepostSerializer(ExtendedActorSystem system) {
    super(system, "Fencepost journal");
    int format = system.settings().config().getInt(BATCH_FORMAT_KEY);
    if (format != 6 && format != 7) {
      throw new io.fencepost.errors.SettingsException(BATCH_FORMAT_KEY, format,
          "must be 7 (the batch frame), or 6 while nodes of a version before the frame still run");
    }
    this.writeFrames = format == 7;
  }

  @Override
  public int identifier() {
    return IDENTIFIER;
  }

  @Override
  public String manifest(Object o) {
    if (o instanceof BatchEvent) {
      return writeFrames ? BATCH_V7 : BATCH_V6;
    }
    if (o instanceof PartitionState) {
      return STATE_V6;
    }
    throw cannotSerialize(o);
  }

  @Override
  public byte[] toBinary(Object o) {
    if (writeFrames && o instanceof BatchEvent e) {
      return frame.write(e);
    }
    return super.toBinary(o);
  }

  @Override
  public Object fromBinary(byte[] bytes, String manifest) throws java.io.NotSerializableException {
    if (BATCH_V7.equals(manifest)) {
      try {
        return frame.read(bytes);
      } catch (IOException e) {
        throw corrupt(bytes, manifest, e);
      }
    }
    return super.fromBinary(bytes, manifest);
  }

  @Override
  protected void write(DataOutputStream out, Object o) throws IOException {
    if (o instanceof BatchEvent e) {
      writeBatch(out, e);
    } else if (o instanceof PartitionState<?> s) {
      writeState(out, s);
    } else {
      throw cannotSerialize(o);
    }
  }

  @Override
  protected Object read(DataInputStream in, String manifest) throws IOException {
    return switch (manifest) {
      case BATCH_V1 -> readBatch(in, 1);
      case BATCH_V2 -> readBatch(in, 2);
      case BATCH_V3 -> readBatch(in, 3);
      case BATCH_V4 -> readBatch(in, 4);
      case BATCH_V5 -> readBatch(in, 5);
      case BATCH_V6 -> readBatch(in, 6);
      case STATE_V1 -> readState(in, 1);
      case STATE_V2 -> readState(in, 2);
      case STATE_V3 -> readState(in, 3);
      case STATE_V4 -> readState(in, 4);
      case STATE_V5 -> readState(in, 5);
      case STATE_V6 -> readState(in, 6);
      default -> null;
    };
  }

  private void writeBatch(DataOutputStream out, BatchEvent e) throws IOException {
    out.writeUTF(e.incarnation());
    out.writeLong(e.fromOffset());
    out.writeLong(e.nextOffset());
    out.writeLong(e.atMillis());
    out.writeInt(e.applied());
    out.writeInt(e.droppedByKey());
    long[] d = e.keyDigests();
    out.writeInt(d.length);
    for (long v : d) {
      out.writeLong(v);
    }
    out.writeInt(e.events().size());
    for (Object event : e.events()) {
      writeNested(out, event);
    }
    out.writeInt(e.deadLetters().size());
    for (DeadLetterEntry dead : e.deadLetters()) {
      out.writeLong(dead.offset());
      writeLongString(out, dead.key());
      out.writeUTF(dead.errorClass());
      out.writeUTF(dead.journaledMessage());
      out.writeInt(dead.attempts());
      out.writeBoolean(dead.parked());
      out.writeBoolean(dead.parksKey());
      out.writeLong(dead.replayOf());
    }
    out.writeInt(e.unparked().size());
    for (String key : e.unparked()) {
      writeLongString(out, key);
    }
    out.writeInt(e.outbox().size());
    for (OutboxRecord r : e.outbox()) {
      out.writeUTF(r.topic());
      out.writeBoolean(r.key().isPresent());
      writeLongString(out, r.key().orElse(""));
      out.writeInt(r.value().length);
      out.write(r.value());
    }
    writeCalls(out, e.calls());
    writeLongs(out, e.replayed());
  }

  private static void writeLongs(DataOutputStream out, long[] values) throws IOException {
    out.writeInt(values.length);
    for (long v : values) {
      out.writeLong(v);
    }
  }

  private static long[] readLongs(DataInputStream in) throws IOException {
    long[] values = new long[in.readInt()];
    for (int i = 0; i < values.length; i++) {
      values[i] = in.readLong();
    }
    return values;
  }

  private static long[] toArray(java.util.Collection<Long> values) {
    return values.stream().mapToLong(Long::longValue).toArray();
  }

  private static void writeCalls(DataOutputStream out, java.util.Collection<CallOutcome> calls) throws IOException {
    out.writeInt(calls.size());
    for (CallOutcome c : calls) {
      out.writeLong(c.offset());
      writeLongString(out, c.key());
      writeLongString(out, c.outcome());
    }
  }

  private static List<CallOutcome> readCalls(DataInputStream in) throws IOException {
    int n = in.readInt();
    List<CallOutcome> calls = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      calls.add(new CallOutcome(in.readLong(), readLongString(in), readLongString(in)));
    }
    return calls;
  }

  /** UTF-8 with an int length: keys and outcomes may exceed writeUTF's 64 KiB. */
  private static void writeLongString(DataOutputStream out, String s) throws IOException {
    byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    out.writeInt(b.length);
    out.write(b);
  }

  private static String readLongString(DataInputStream in) throws IOException {
    byte[] b = new byte[in.readInt()];
    in.readFully(b);
    return new String(b, java.nio.charset.StandardCharsets.UTF_8);
  }

  private BatchEvent readBatch(DataInputStream in, int version) throws IOException {
    String incarnation = in.readUTF();
    long from = in.readLong();
    long next = in.readLong();
    long at = in.readLong();
    int applied = in.readInt();
    int droppedByKey = in.readInt();
    long[] d = new long[in.readInt()];
    for (int i = 0; i < d.length; i++) {
      d[i] = in.readLong();
    }
    int n = in.readInt();
    List<Object> events = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      events.add(readNested(in));
    }
    List<DeadLetterEntry> dead = new ArrayList<>();
    List<String> unparked = new ArrayList<>();
    if (version >= 2) {
      int m = in.readInt();
      for (int i = 0; i < m; i++) {
        long offset = in.readLong();
        String key = version >= 5 ? readLongString(in) : in.readUTF();
        String errorClass = in.readUTF();
        String message = in.readUTF();
        int attempts = in.readInt();
        boolean parked = version >= 3 && in.readBoolean();
        boolean parksKey = version >= 3 && in.readBoolean();
        long replayOf = version >= 6 ? in.readLong() : -1;
        dead.add(new DeadLetterEntry(offset, key, errorClass, message, attempts, parked, parksKey, replayOf));
      }
    }
    if (version >= 3) {
      int u = in.readInt();
      for (int i = 0; i < u; i++) {
        unparked.add(version >= 5 ? readLongString(in) : in.readUTF());
      }
    }
    List<OutboxRecord> outbox = new ArrayList<>();
    List<CallOutcome> calls = List.of();
    if (version >= 4) {
      int o = in.readInt();
      for (int i = 0; i < o; i++) {
        String topic = in.readUTF();
        boolean hasKey = in.readBoolean();
        String key = readLongString(in);
        byte[] value = new byte[in.readInt()];
        in.readFully(value);
        outbox.add(new OutboxRecord(topic, hasKey ? java.util.Optional.of(key) : java.util.Optional.empty(), value));
      }
      calls = readCalls(in);
    }
    long[] replayed = version >= 6 ? readLongs(in) : new long[0];
    return new BatchEvent(incarnation, from, next, at, events, d, applied, droppedByKey, dead, unparked, outbox,
        calls, replayed);
  }

  private void writeState(DataOutputStream out, PartitionState<?> s) throws IOException {
    writeNested(out, s.user());
    out.writeLong(s.nextOffset());
    out.writeUTF(s.lastIncarnation());
    out.writeLong(s.appliedRecords());
    out.writeLong(s.droppedByKey());
    out.writeLong(s.batches());
    out.writeLong(s.lastWriteMillis());
    out.writeLong(s.deadLettered());
    out.writeInt(s.parkedKeys().size());
    for (var e : s.parkedKeys().entrySet()) {
      writeLongString(out, e.getKey());
      out.writeLong(e.getValue());
    }
    writeCalls(out, s.callOutcomes().values());
    ReplayLedger replays = s.replays();
    out.writeLong(replays.legacyBelow());
    writeLongs(out, toArray(replays.replayableOffsets()));
    writeLongs(out, toArray(replays.legacyReplayedOffsets()));
    KeyWindow w = s.window();
    if (w == null) {
      out.writeBoolean(false);
      return;
    }
    out.writeBoolean(true);
    out.writeInt(w.maxKeys());
    out.writeLong(w.maxAgeMillis());
    out.writeInt(w.size());
    IOException[] failure = new IOException[1];
    w.forEach((hi, lo, at) -> {
      try {
        out.writeLong(hi);
        out.writeLong(lo);
        out.writeLong(at);
      } catch (IOException e) {
        failure[0] = e;
      }
    });
    if (failure[0] != null) {
      throw failure[0];
    }
  }

  private PartitionState<Object> readState(DataInputStream in, int version) throws IOException {
    Object user = readNested(in);
    long next = in.readLong();
    String incarnation = in.readUTF();
    long applied = in.readLong();
    long droppedByKey = in.readLong();
    long batches = in.readLong();
    long lastWrite = in.readLong();
    long deadLettered = version >= 2 ? in.readLong() : 0;
    java.util.Map<String, Long> parked = new java.util.HashMap<>();
    if (version >= 3) {
      int n = in.readInt();
      for (int i = 0; i < n; i++) {
        parked.put(version >= 5 ? readLongString(in) : in.readUTF(), in.readLong());
      }
    }
    List<CallOutcome> calls = version >= 4 ? readCalls(in) : List.of();
    // A snapshot before S6 does not tell which dead letters below it may be replayed (see ReplayLedger).
    long legacyBelow = version >= 6 ? in.readLong() : next;
    long[] replayable = version >= 6 ? readLongs(in) : new long[0];
    long[] legacyReplayed = version >= 6 ? readLongs(in) : new long[0];
    KeyWindow window = null;
    if (in.readBoolean()) {
      int maxKeys = in.readInt();
      long maxAge = in.readLong();
      int size = in.readInt();
      window = new KeyWindow(maxKeys, maxAge);
      for (int i = 0; i < size; i++) {
        window.appendUnchecked(in.readLong(), in.readLong(), in.readLong());
      }
    }
    PartitionState<Object> state = new PartitionState<>(user, next, window, incarnation, applied, droppedByKey,
        batches, lastWrite, deadLettered, parked, calls);
    state.replays().restore(legacyBelow, java.util.Arrays.stream(replayable).boxed().toList(),
        java.util.Arrays.stream(legacyReplayed).boxed().toList());
    return state;
  }

  private void writeNested(DataOutputStream out, Object o) throws IOException {
    nested.write(out, o);
  }

  private Object readNested(DataInputStream in) throws IOException {
    return nested.read(in);
  }
}
