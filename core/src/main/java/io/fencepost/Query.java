package io.fencepost;

/**
 * A question to a partition's actor about its applied state, answered by
 * {@link PartitionActor#onQuery} with a reply of type {@code R}. Queries and replies travel between
 * nodes: like events, they must be serializable by Pekko (implement {@link JacksonSerializable} or
 * bind a serializer).
 *
 * <pre>{@code
 * public record BalanceOf(String merchantId) implements Query<Long>, JacksonSerializable { }
 * }</pre>
 *
 * @param <R> the reply's type
 */
public interface Query<R> {
}
