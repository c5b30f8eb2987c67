package io.fencepost.kafka.internal;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import io.fencepost.Query;
import io.fencepost.annotation.InternalApi;
import io.fencepost.internal.BinarySerializer;
import org.apache.pekko.actor.ExtendedActorSystem;

/**
 * INTERNAL API: binary serializer for {@link QueryRequest} and {@link QueryReply}, and for
 * {@link StatusRequest} and its reply. The user's query and reply go through the serializers bound to
 * their classes.
 */
@InternalApi
public final class QuerySerializer extends BinarySerializer {

  /** Registered in the connectors module's reference.conf; never reuse or change. */
  public static final int IDENTIFIER = 741_102;

  private static final String REQUEST = "Q";
  private static final String ANSWER = "A";
  private static final String REFUSAL = "R";
  private static final String STATUS_REQUEST = "S";
  private static final String STATUS_REPLY = "V";

  public QuerySerializer(ExtendedActorSystem system) {
    super(system, "Fencepost query");
  }

  @Override
  public int identifier() {
    return IDENTIFIER;
  }

  @Override
  public String manifest(Object o) {
    if (o instanceof QueryRequest) {
      return REQUEST;
    } else if (o instanceof QueryReply.Answer) {
      return ANSWER;
    } else if (o instanceof QueryReply.Refusal) {
      return REFUSAL;
    } else if (o instanceof StatusRequest) {
      return STATUS_REQUEST;
    } else if (o instanceof StatusRequest.Reply) {
      return STATUS_REPLY;
    }
    throw cannotSerialize(o);
  }

  @Override
  protected void write(DataOutputStream out, Object o) throws IOException {
    if (o instanceof QueryRequest q) {
      writePartition(out, q.partition());
      out.writeLong(q.minNextOffset());
      out.writeLong(q.waitMillis());
      writeRef(out, q.replyTo());
      nested.write(out, q.query());
    } else if (o instanceof QueryReply.Answer a) {
      writePartition(out, a.partition());
      out.writeLong(a.nextOffset());
      out.writeUTF(a.incarnation());
      out.writeUTF(a.node());
      nested.write(out, a.reply());
    } else if (o instanceof QueryReply.Refusal r) {
      writePartition(out, r.partition());
      out.writeByte(r.kind().ordinal());
      out.writeLong(r.nextOffset());
      out.writeUTF(r.causeClass());
      out.writeUTF(truncate(r.message()));
    } else if (o instanceof StatusRequest q) {
      writeRef(out, q.replyTo());
    } else if (o instanceof StatusRequest.Reply r) {
      out.writeUTF(r.node());
      out.writeInt(r.rows().size());
      for (StatusRequest.Row v : r.rows()) {
        writePartition(out, v.partition());
        out.writeUTF(v.ownerNode());
        out.writeLong(v.nextOffset());
        out.writeLong(v.lag());
        out.writeLong(v.appliedRecords());
        out.writeLong(v.droppedByKey());
        out.writeLong(v.droppedRedelivery());
        out.writeLong(v.deadLettered());
        out.writeLong(v.retries());
        out.writeUTF(truncate(v.lastError()));
        out.writeUTF(truncate(v.halted()));
      }
    } else {
      throw cannotSerialize(o);
    }
  }

  @Override
  protected Object read(DataInputStream in, String manifest) throws IOException {
    switch (manifest) {
      case REQUEST: {
        var partition = readPartition(in);
        long minNextOffset = in.readLong();
        long waitMillis = in.readLong();
        var replyTo = this.<QueryReply>readRef(in);
        return new QueryRequest(partition, (Query<?>) nested.read(in), minNextOffset, waitMillis, replyTo);
      }
      case ANSWER: {
        var partition = readPartition(in);
        long nextOffset = in.readLong();
        String incarnation = in.readUTF();
        String node = in.readUTF();
        return new QueryReply.Answer(partition, nested.read(in), nextOffset, incarnation, node);
      }
      case REFUSAL:
        return new QueryReply.Refusal(readPartition(in), QueryReply.Kind.values()[in.readByte()], in.readLong(),
            in.readUTF(), in.readUTF());
      case STATUS_REQUEST:
        return new StatusRequest(readRef(in));
      case STATUS_REPLY: {
        String node = in.readUTF();
        int n = in.readInt();
        List<StatusRequest.Row> rows = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          rows.add(new StatusRequest.Row(readPartition(in), in.readUTF(), in.readLong(), in.readLong(), in.readLong(),
              in.readLong(), in.readLong(), in.readLong(), in.readLong(), in.readUTF(), in.readUTF()));
        }
        return new StatusRequest.Reply(node, rows);
      }
      default:
        return null;
    }
  }
}
