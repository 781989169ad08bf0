package io.github.entropydiode.client;

import io.grpc.Status;

/**
 * FAILED_PRECONDITION: the call accepts only some source kinds ({@code acceptKinds}) and the pool
 * holds none of them and none arrived lately; the message names what the pool holds. Nothing was
 * consumed. Not transient ({@link #isRetryable()} is false): a {@link RandomStream} ends with it
 * instead of reconnecting.
 */
public final class FailedPreconditionException extends EntropyException {
  private static final long serialVersionUID = 1L;

  /**
   * A FAILED_PRECONDITION error.
   *
   * @param details the server's message
   * @param cause the underlying exception, or null
   */
  public FailedPreconditionException(String details, Throwable cause) {
    super(Status.Code.FAILED_PRECONDITION, details, cause);
  }
}
