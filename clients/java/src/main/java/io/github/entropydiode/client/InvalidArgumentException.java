package io.github.entropydiode.client;

import io.grpc.Status;

/** INVALID_ARGUMENT: a field is out of range; the message names the field and its bounds (also raised before sending for values that cannot be encoded, such as a negative count). */
public final class InvalidArgumentException extends EntropyException {
  private static final long serialVersionUID = 1L;

  /**
   * A INVALID_ARGUMENT error.
   *
   * @param details the server's message
   * @param cause the underlying exception, or null
   */
  public InvalidArgumentException(String details, Throwable cause) {
    super(Status.Code.INVALID_ARGUMENT, details, cause);
  }
}
