package io.fencepost.internal;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

import io.fencepost.BatchOutcome;
import io.fencepost.DeadLetter;
import io.fencepost.Inbound;
import io.fencepost.PartitionCommand;
import io.fencepost.PartitionId;
import io.fencepost.PartitionStatus;
import io.fencepost.errors.FatalException;
import io.fencepost.errors.FencepostException;
import io.fencepost.errors.HandlerFailedException;
import io.fencepost.errors.OffsetGapException;
import io.fencepost.errors.PartitionFencedException;
import io.fencepost.errors.RecordsParkedException;
import io.fencepost.errors.RetriableException;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * Binary serializer for {@link PartitionCommand}s, {@link BatchOutcome}s and {@link PartitionStatus}.
 * Record values inside a batch go through the serializer bound to their class. Errors travel as kind
 * and message and are rebuilt as the same exception types on the receiving node. One manifest per
 * message; each payload starts with its format version (see {@link BinarySerializer}).
 */
public final class ProtocolSerializer extends BinarySerializer {

  /** Registered in core's reference.conf; never reuse or change. */
  public static final int IDENTIFIER = 741_101;

  private static final String APPLY = "A";
  private static final String STATUS_QUERY = "Q";
  private static final String STOP = "X";
  private static final String APPLIED = "O";
  private static final String REJECTED = "R";
  private static final String STATUS = "S";

  public ProtocolSerializer(ExtendedActorSystem system) {
    super(system, "Fencepost protocol");
  }

  @Override
  public int identifier() {
    return IDENTIFIER;
  }

  @Override
  public String manifest(Object o) {
    if (o instanceof PartitionCommand.ApplyBatch) {
      return APPLY;
    } else if (o instanceof PartitionCommand.GetStatus) {
      return STATUS_QUERY;
    } else if (o instanceof PartitionCommand.Stop) {
      return STOP;
    } else if (o instanceof BatchOutcome.Applied) {
      return APPLIED;
    } else if (o instanceof BatchOutcome.Rejected) {
      return REJECTED;
    } else if (o instanceof PartitionStatus) {
      return STATUS;
    }
    throw new IllegalArgumentException("ProtocolSerializer cannot serialize " + o.getClass().getName()
        + " (GetState answers only in the actor's own process)");
  }

  @Override
  protected void write(DataOutputStream out, Object o) throws IOException {
    if (o instanceof PartitionCommand.ApplyBatch a) {
      writeRef(out, a.replyTo());
      out.writeLong(a.coveredFrom());
      out.writeInt(a.records().size());
      for (Inbound<?> r : a.records()) {
        writeInbound(out, r);
      }
      out.writeInt(a.deadLetters().size());
      for (DeadLetter d : a.deadLetters()) {
        writePartition(out, d.partition());
        out.writeLong(d.offset());
        out.writeBoolean(d.key().isPresent());
        out.writeUTF(d.key().orElse(""));
        out.writeUTF(d.errorClass());
        out.writeUTF(truncate(d.errorMessage()));
        out.writeInt(d.attempts());
        out.writeBoolean(d.parked());
        out.writeLong(d.replayOf().orElse(-1));
      }
    } else if (o instanceof PartitionCommand.GetStatus g) {
      writeRef(out, g.replyTo());
    } else if (o instanceof BatchOutcome.Applied a) {
      writePartition(out, a.partition());
      out.writeLong(a.nextOffset());
      out.writeInt(a.applied());
      out.writeInt(a.droppedRedelivery());
      out.writeInt(a.droppedByKey());
      out.writeBoolean(a.written());
      out.writeInt(a.deadLettered());
      out.writeInt(a.published());
    } else if (o instanceof BatchOutcome.Rejected r) {
      writePartition(out, r.partition());
      FencepostException e = r.error();
      if (e instanceof PartitionFencedException f) {
        out.writeByte(0);
        out.writeUTF(f.partition());
        out.writeLong(f.expectedNextOffset());
        out.writeLong(f.storedNextOffset());
      } else if (e instanceof RecordsParkedException parkedRecords) {
        out.writeByte(4);
        out.writeUTF(parkedRecords.partition());
        out.writeInt(parkedRecords.offsets().size());
        for (long parkedOffset : parkedRecords.offsets()) {
          out.writeLong(parkedOffset);
        }
      } else if (e instanceof OffsetGapException gap) {
        out.writeByte(5);
        out.writeUTF(gap.partition());
        out.writeLong(gap.storedNextOffset());
        out.writeLong(gap.firstMissing());
        out.writeLong(gap.nextPresent());
      } else if (e instanceof HandlerFailedException h) {
        out.writeByte(3);
        out.writeUTF(h.partition());
        out.writeLong(h.offset());
        out.writeBoolean(h.isRetriable());
        out.writeUTF(h.causeClass());
        out.writeUTF(truncate(h.causeMessage()));
      } else {
        out.writeByte(e.isRetriable() ? 1 : 2);
        out.writeUTF(truncate(e.getMessage()));
      }
    } else if (o instanceof PartitionStatus s) {
      writePartition(out, s.partition());
      out.writeLong(s.nextOffset().orElse(-1));
      out.writeLong(s.appliedRecords());
      out.writeLong(s.droppedByKey());
      out.writeLong(s.droppedRedelivery());
      out.writeInt(s.windowKeys());
      out.writeUTF(s.incarnation());
      out.writeUTF(s.node());
      out.writeLong(s.deadLettered());
    } else if (!(o instanceof PartitionCommand.Stop)) {
      throw new IllegalArgumentException("ProtocolSerializer cannot serialize " + o.getClass().getName());
    }
  }

  @Override
  protected Object read(DataInputStream in, String manifest) throws IOException {
    switch (manifest) {
      case APPLY: {
        ActorRef<BatchOutcome> replyTo = readRef(in);
        long coveredFrom = in.readLong();
        int n = in.readInt();
        List<Inbound<?>> records = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          records.add(readInbound(in));
        }
        int m = in.readInt();
        List<DeadLetter> dead = new ArrayList<>(m);
        for (int i = 0; i < m; i++) {
          PartitionId p = readPartition(in);
          long offset = in.readLong();
          boolean hasKey = in.readBoolean();
          String key = in.readUTF();
          String errorClass = in.readUTF();
          String message = in.readUTF();
          int attempts = in.readInt();
          boolean parked = in.readBoolean();
          long replayOf = in.readLong();
          dead.add(new DeadLetter(p, offset, hasKey ? Optional.of(key) : Optional.empty(), errorClass, message,
              attempts, parked, replayOf >= 0 ? OptionalLong.of(replayOf) : OptionalLong.empty()));
        }
        return new PartitionCommand.ApplyBatch(records, dead, coveredFrom, replyTo);
      }
      case STATUS_QUERY:
        return new PartitionCommand.GetStatus(readRef(in));
      case STOP:
        return new PartitionCommand.Stop();
      case APPLIED:
        return new BatchOutcome.Applied(readPartition(in), in.readLong(), in.readInt(), in.readInt(), in.readInt(),
            in.readBoolean(), in.readInt(), in.readInt());
      case REJECTED: {
        PartitionId p = readPartition(in);
        int kind = in.readByte();
        FencepostException e = switch (kind) {
          case 0 -> new PartitionFencedException(in.readUTF(), in.readLong(), in.readLong());
          case 1 -> new RetriableException(in.readUTF());
          case 5 -> new OffsetGapException(in.readUTF(), in.readLong(), in.readLong(), in.readLong());
          case 4 -> {
            String partition = in.readUTF();
            int n = in.readInt();
            List<Long> offsets = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
              offsets.add(in.readLong());
            }
            yield new RecordsParkedException(partition, offsets);
          }
          case 3 -> {
            String partition = in.readUTF();
            long offset = in.readLong();
            boolean retriable = in.readBoolean();
            yield new HandlerFailedException(partition, offset, retriable, in.readUTF(), in.readUTF(), null);
          }
          default -> new FatalException(in.readUTF());
        };
        return new BatchOutcome.Rejected(p, e);
      }
      case STATUS: {
        PartitionId p = readPartition(in);
        long next = in.readLong();
        return new PartitionStatus(p, next < 0 ? OptionalLong.empty() : OptionalLong.of(next), in.readLong(),
            in.readLong(), in.readLong(), in.readInt(), in.readUTF(), in.readUTF(), in.readLong());
      }
      default:
        return null;
    }
  }

  private void writeInbound(DataOutputStream out, Inbound<?> r) throws IOException {
    writePartition(out, r.partition());
    out.writeLong(r.offset());
    out.writeBoolean(r.key().isPresent());
    if (r.key().isPresent()) {
      out.writeUTF(r.key().get());
    }
    out.writeLong(r.timestamp().toEpochMilli());
    out.writeInt(r.headers().size());
    for (Inbound.Header h : r.headers()) {
      out.writeUTF(h.name());
      out.writeInt(h.value().length);
      out.write(h.value());
    }
    nested.write(out, r.value());
  }

  private Inbound<?> readInbound(DataInputStream in) throws IOException {
    PartitionId p = readPartition(in);
    long offset = in.readLong();
    Optional<String> key = in.readBoolean() ? Optional.of(in.readUTF()) : Optional.empty();
    Instant ts = Instant.ofEpochMilli(in.readLong());
    int n = in.readInt();
    List<Inbound.Header> headers = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String name = in.readUTF();
      byte[] v = new byte[in.readInt()];
      in.readFully(v);
      headers.add(new Inbound.Header(name, v));
    }
    // A key deserializer's key is not sent between nodes (a batch's actor runs where it was consumed).
    return new Inbound<>(p, offset, key, nested.read(in), headers, ts);
  }

}
