package io.fencepost.internal;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializers;

/**
 * Writes and reads user objects (events, states, record values) inside Fencepost's own binary
 * formats, through whatever serializer the application binds to their class: serializer id,
 * manifest, length, bytes; null as a marker.
 */
public final class NestedSerialization {

  private static final int NULL = Integer.MIN_VALUE;

  private final ExtendedActorSystem system;
  private volatile Serialization serialization;

  public NestedSerialization(ExtendedActorSystem system) {
    this.system = system;
  }

  public void write(DataOutputStream out, Object o) throws IOException {
    if (o == null) {
      out.writeInt(NULL);
      return;
    }
    var serializer = serialization().findSerializerFor(o);
    byte[] payload = serializer.toBinary(o);
    out.writeInt(serializer.identifier());
    out.writeUTF(Serializers.manifestFor(serializer, o));
    out.writeInt(payload.length);
    out.write(payload);
  }

  public Object read(DataInputStream in) throws IOException {
    int id = in.readInt();
    if (id == NULL) {
      return null;
    }
    String manifest = in.readUTF();
    byte[] payload = new byte[in.readInt()];
    in.readFully(payload);
    return serialization().deserialize(payload, id, manifest).get();
  }

  private Serialization serialization() {
    Serialization s = serialization;
    if (s == null) {
      s = SerializationExtension.get(system);
      serialization = s;
    }
    return s;
  }
}
