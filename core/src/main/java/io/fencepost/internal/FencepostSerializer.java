package io.fencepost.internal;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.NotSerializableException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.pekko.actor.ExtendedActorSystem;

/**
 * Binary serializer for Fencepost's journal event ({@link BatchEvent}, manifest {@code B}: a
 * {@link BatchFrame}) and snapshot ({@link PartitionState}, manifest {@code S}). The user's events
 * and state inside them are serialized by whatever serializer the application binds to their
 * classes (e.g. {@code jackson-cbor}), so this format never needs to know user types. Each payload
 * starts with its format version (see {@link BinarySerializer}).
 */
public final class FencepostSerializer extends BinarySerializer {

  /** Registered in core's reference.conf; never reuse or change. */
  public static final int IDENTIFIER = 741_100;

  /** A batch's journal entry. */
  static final String BATCH = "B";
  /**
   * A partition's snapshot, format version 2: its key window by reference to segments (version 1,
   * written by pre-release builds, held the whole window and is not read).
   */
  static final String STATE = "S";
  static final int STATE_FORMAT = 2;
  /** A run of a key window's keys that snapshots refer to. */
  static final String SEGMENT = "W";

  private final BatchFrame frame;

  public FencepostSerializer(ExtendedActorSystem system) {
    super(system, "Fencepost journal");
    this.frame = new BatchFrame(nested, system.settings().config());
  }

  @Override
  public int identifier() {
    return IDENTIFIER;
  }

  @Override
  public String manifest(Object o) {
    if (o instanceof BatchEvent) {
      return BATCH;
    }
    if (o instanceof PartitionState) {
      return STATE;
    }
    if (o instanceof WindowSegment) {
      return SEGMENT;
    }
    throw cannotSerialize(o);
  }

  @Override
  protected int formatVersion(String manifest) {
    return STATE.equals(manifest) ? STATE_FORMAT : FORMAT_VERSION;
  }

  @Override
  public byte[] toBinary(Object o) {
    if (o instanceof BatchEvent e) {
      return frame.write(e);
    }
    return super.toBinary(o);
  }

  @Override
  public Object fromBinary(byte[] bytes, String manifest) throws NotSerializableException {
    if (BATCH.equals(manifest)) {
      checkVersion(bytes, manifest);
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
    if (o instanceof PartitionState<?> s) {
      writeState(out, s);
    } else if (o instanceof WindowSegment w) {
      out.writeLong(w.sequenceNr());
      out.writeLong(w.fromOrdinal());
      writeLongs(out, w.triples());
    } else {
      throw cannotSerialize(o);
    }
  }

  @Override
  protected Object read(DataInputStream in, String manifest) throws IOException {
    if (SEGMENT.equals(manifest)) {
      return new WindowSegment(in.readLong(), in.readLong(), readLongs(in));
    }
    return STATE.equals(manifest) ? readState(in) : null;
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

  private static long[] toArray(Collection<Long> values) {
    return values.stream().mapToLong(Long::longValue).toArray();
  }

  private static void writeCalls(DataOutputStream out, Collection<CallOutcome> calls) throws IOException {
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
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    out.writeInt(b.length);
    out.write(b);
  }

  private static String readLongString(DataInputStream in) throws IOException {
    byte[] b = new byte[in.readInt()];
    in.readFully(b);
    return new String(b, StandardCharsets.UTF_8);
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
    writeLongs(out, toArray(s.replays().replayableOffsets()));
    WindowImage w = s.windowImage() != null ? s.windowImage()
        : s.window() != null ? WindowImage.inline(s.window()) : null;
    if (w == null) {
      out.writeBoolean(false);
      return;
    }
    out.writeBoolean(true);
    out.writeInt(w.maxKeys());
    out.writeLong(w.maxAgeMillis());
    out.writeLong(w.inserted());
    out.writeInt(w.size());
    out.writeInt(w.refs().size());
    for (WindowImage.SegmentRef r : w.refs()) {
      out.writeLong(r.sequenceNr());
      out.writeLong(r.fromOrdinal());
      out.writeInt(r.count());
      out.writeLong(r.checksum());
    }
    out.writeLong(w.tailFrom());
    writeLongs(out, w.tail());
  }

  private PartitionState<Object> readState(DataInputStream in) throws IOException {
    Object user = readNested(in);
    long next = in.readLong();
    String incarnation = in.readUTF();
    long applied = in.readLong();
    long droppedByKey = in.readLong();
    long batches = in.readLong();
    long lastWrite = in.readLong();
    long deadLettered = in.readLong();
    Map<String, Long> parked = new HashMap<>();
    int n = in.readInt();
    for (int i = 0; i < n; i++) {
      parked.put(readLongString(in), in.readLong());
    }
    List<CallOutcome> calls = readCalls(in);
    long[] replayable = readLongs(in);
    WindowImage window = in.readBoolean() ? readWindow(in) : null;
    PartitionState<Object> state = new PartitionState<>(user, next, null, incarnation, applied, droppedByKey,
        batches, lastWrite, deadLettered, parked, calls).withWindowImage(window);
    state.replays().restore(Arrays.stream(replayable).boxed().toList());
    return state;
  }

  private static WindowImage readWindow(DataInputStream in) throws IOException {
    int maxKeys = in.readInt();
    long maxAge = in.readLong();
    long inserted = in.readLong();
    int size = in.readInt();
    int n = in.readInt();
    List<WindowImage.SegmentRef> refs = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      refs.add(new WindowImage.SegmentRef(in.readLong(), in.readLong(), in.readInt(), in.readLong()));
    }
    long tailFrom = in.readLong();
    try {
      return new WindowImage(maxKeys, maxAge, inserted, size, refs, tailFrom, readLongs(in), List.of());
    } catch (IllegalArgumentException e) {
      throw new IOException("the snapshot's key window does not add up: " + e.getMessage(), e);
    }
  }

  private void writeNested(DataOutputStream out, Object o) throws IOException {
    nested.write(out, o);
  }

  private Object readNested(DataInputStream in) throws IOException {
    return nested.read(in);
  }
}
