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
    scala.util.Try<Object> read = serialization().deserialize(payload, id, manifest);
    if (read.isFailure()) {
      Throwable e = read.failed().get();
      String missing = missingClass(e, manifest);
      if (missing != null) {
        throw new IllegalStateException("class [" + missing + "] of a journaled object is not on the classpath "
            + "(Pekko serializer " + id + "): put the jar holding the service's events and state on the classpath "
            + "(fencepost tools: --classpath)", e);
      }
      throw new IllegalStateException("the serializer with id " + id + " cannot read an object with manifest ["
          + manifest + "]: " + e, e);
    }
    return read.get();
  }

  /** The class name the failure is about when it is a class the system cannot load, else null. */
  private String missingClass(Throwable e, String manifest) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof ClassNotFoundException || t instanceof NoClassDefFoundError) {
        return t.getMessage();
      }
    }
    // Jackson's manifest is the class name, with "#version" for a versioned migration.
    String className = manifest.contains("#") ? manifest.substring(0, manifest.indexOf('#')) : manifest;
    if (!className.isEmpty() && className.indexOf('.') > 0 && !className.contains(" ")
        && system.dynamicAccess().getClassFor(className, scala.reflect.ClassTag.Any()).isFailure()) {
      return className;
    }
    return null;
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
