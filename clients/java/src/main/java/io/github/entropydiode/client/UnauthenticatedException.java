package io.github.entropydiode.client;

import io.grpc.Status;

/** UNAUTHENTICATED: no API key, or a key the gateway does not know. */
public final class UnauthenticatedException extends EntropyException {
  private static final long serialVersionUID = 1L;

  /**
   * A UNAUTHENTICATED error.
   *
   * @param details the server's message
   * @param cause the underlying exception, or null
   */
  public UnauthenticatedException(String details, Throwable cause) {
    super(Status.Code.UNAUTHENTICATED, details, cause);
  }
}
