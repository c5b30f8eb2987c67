package io.fencepost.internal.writepath;

import java.util.Optional;

import io.fencepost.Effects;
import io.fencepost.ExternalCall;
import io.fencepost.Inbound;
import io.fencepost.Query;

/**
 * A {@link io.fencepost.PartitionActor}'s hooks as the write path calls them. The hooks stay
 * protected for users; the actor's own package adapts them to this interface.
 */
public interface UserHandlers<V, S, E> {

  /** {@code PartitionActor.emptyState}. */
  S emptyState();

  /** {@code PartitionActor.onRecord}. */
  Effects<E> onRecord(S state, Inbound<V> record);

  /** {@code PartitionActor.applyEvent}. */
  S applyEvent(S state, E event);

  /** {@code PartitionActor.businessKey}. */
  Optional<String> businessKey(Inbound<V> record);

  /** {@code PartitionActor.idempotencyKey}. */
  String idempotencyKey(Inbound<V> record);

  /** {@code PartitionActor.onRecovered}. */
  void onRecovered(S state, long nextOffset);

  /** {@code PartitionActor.onQuery}. */
  Object onQuery(S state, Query<?> query);

  /** The external call {@code effects} asks for (see {@link Effects#hasCall()}); not public on Effects. */
  ExternalCall callOf(Effects<E> effects);

  /** The effects {@code effects}' call continues with once its outcome is known; not public on Effects. */
  Effects<E> afterCall(Effects<E> effects, String outcome);

  /** The user's actor class, to name it in errors. */
  String actorClassName();
}
