package io.github.entropydiode.client;

import io.grpc.Status;

/** CANCELLED: the call was cancelled on this side (the client closed, or the thread was interrupted). */
public final class CancelledException extends EntropyException {
  private static final long serialVersionUID = 1L;

  /**
   * A CANCELLED error.
   *
   * @param details the server's message
   * @param cause the underlying exception, or null
   */
  public CancelledException(String details, Throwable cause) {
    super(Status.Code.CANCELLED, details, cause);
  }
}
