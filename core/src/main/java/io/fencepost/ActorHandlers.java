package io.fencepost;

import java.util.Optional;

import io.fencepost.internal.writepath.UserHandlers;

/** A {@link PartitionActor}'s protected hooks, for the write path (which lives in another package). */
final class ActorHandlers<V, S, E> implements UserHandlers<V, S, E> {

  private final PartitionActor<V, S, E> actor;

  ActorHandlers(PartitionActor<V, S, E> actor) {
    this.actor = actor;
  }

  @Override
  public S emptyState() {
    return actor.emptyState();
  }

  @Override
  public Effects<E> onRecord(S state, Inbound<V> record) {
    return actor.onRecord(state, record);
  }

  @Override
  public S applyEvent(S state, E event) {
    return actor.applyEvent(state, event);
  }

  @Override
  public Optional<String> businessKey(Inbound<V> record) {
    return actor.businessKey(record);
  }

  @Override
  public String idempotencyKey(Inbound<V> record) {
    return actor.idempotencyKey(record);
  }

  @Override
  public void onRecovered(S state, long nextOffset) {
    actor.onRecovered(state, nextOffset);
  }

  @Override
  public Object onQuery(S state, Query<?> query) {
    return actor.onQuery(state, query);
  }

  @Override
  public ExternalCall callOf(Effects<E> effects) {
    return effects.call();
  }

  @Override
  public Effects<E> afterCall(Effects<E> effects, String outcome) {
    return effects.then(outcome);
  }

  @Override
  public String actorClassName() {
    return actor.getClass().getName();
  }
}
