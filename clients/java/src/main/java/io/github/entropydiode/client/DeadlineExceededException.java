package io.github.entropydiode.client;

import io.grpc.Status;

/** DEADLINE_EXCEEDED: the call's own deadline passed first. Nothing was consumed. */
public final class DeadlineExceededException extends EntropyException {
  private static final long serialVersionUID = 1L;

  /**
   * A DEADLINE_EXCEEDED error.
   *
   * @param details the server's message
   * @param cause the underlying exception, or null
   */
  public DeadlineExceededException(String details, Throwable cause) {
    super(Status.Code.DEADLINE_EXCEEDED, details, cause);
  }
}
