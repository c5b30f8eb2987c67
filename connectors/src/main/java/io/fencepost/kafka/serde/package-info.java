/**
 * Kafka serializers and deserializers for Fencepost pipelines: {@link io.fencepost.kafka.serde.JsonDeserializer}
 * turns a record that does not fit its class into a {@code SerializationException} that names the
 * field and the error, which the pipeline dead-letters (see docs/guarantees.md, bad input).
 */
package io.fencepost.kafka.serde;
