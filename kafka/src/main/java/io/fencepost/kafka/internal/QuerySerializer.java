package io.fencepost.kafka.internal;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

import io.fencepost.Query;
import io.fencepost.annotation.InternalApi;
import io.fencepost.internal.BinarySerializer;
import org.apache.pekko.actor.ExtendedActorSystem;

/**
 * INTERNAL API: binary serializer for {@link QueryRequest} and {@link QueryReply}. The user's query
 * and reply go through the serializers bound to their classes.
 */
@InternalApi
public final class QuerySerializer extends BinarySerializer {

  /** Registered in the kafka module's reference.conf; never reuse or change. */
  public static final int IDENTIFIER = 741_102;

  private static final String REQUEST = "Q";
  private static final String ANSWER = "A";
  private static final String REFUSAL = "R";

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
      default:
        return null;
    }
  }
}
