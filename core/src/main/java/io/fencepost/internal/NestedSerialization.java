package io.fencepost.internal;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.serialization.SerializerWithStringManifest;
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
    Encoding encoding = encodingOf(o);
    byte[] payload = encoding.serializer().toBinary(o);
    out.writeInt(encoding.id());
    out.writeUTF(encoding.manifest());
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
    return deserialize(payload, id, manifest);
  }

  /**
   * How objects of one class are written: the serializer bound to it and its manifest, resolved
   * once. {@code byClass} says the manifest depends on the class alone (Pekko's Jackson serializers,
   * and every serializer without a string manifest), so it holds for every object of the class;
   * otherwise the serializer may give each object its own manifest, which must be asked each time.
   */
  public record Encoding(Class<?> type, Serializer serializer, String manifest, boolean byClass) {

    public int id() {
      return serializer.identifier();
    }
  }

  /** The encoding of {@code o}'s class (of {@code o} itself when not {@link Encoding#byClass}). */
  public Encoding encodingOf(Object o) {
    Serializer serializer = serialization().findSerializerFor(o);
    return new Encoding(o.getClass(), serializer, Serializers.manifestFor(serializer, o), manifestByClass(serializer));
  }

  private static boolean manifestByClass(Serializer serializer) {
    if (!(serializer instanceof SerializerWithStringManifest)) {
      return true;   // Pekko writes the class name as the manifest, when it writes one at all
    }
    return JACKSON_MANIFEST.get(serializer.getClass());
  }

  /**
   * Whether a serializer class's manifest is Pekko's Jackson serializer's own (the class name, and
   * the class's migration version); not when a subclass overrides it.
   */
  private static final ClassValue<Boolean> JACKSON_MANIFEST = new ClassValue<>() {
    @Override
    protected Boolean computeValue(Class<?> type) {
      try {
        return type.getMethod("manifest", Object.class).getDeclaringClass().getName()
            .equals("org.apache.pekko.serialization.jackson.JacksonSerializer");
      } catch (NoSuchMethodException e) {
        return false;
      }
    }
  };

  /** Reads one object written by the serializer {@code id} under {@code manifest}. */
  public Object deserialize(byte[] payload, int id, String manifest) {
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
