package io.github.entropydiode.client;

import java.util.Objects;

/**
 * Where a gateway listens and whether to use TLS: the endpoint syntax every Entropy Diode client
 * accepts.
 *
 * <ul>
 *   <li>{@code host:port} or {@code host}: TLS, unless the host is loopback ({@code localhost},
 *       {@code 127.0.0.0/8}, {@code ::1}) and no CA file is given (then plaintext, for
 *       {@code entropy-gateway --dev}); a remote key never crosses the network in the clear by
 *       default;
 *   <li>{@code http://host:port}: plaintext;
 *   <li>{@code https://host:port}: TLS (system roots, or the CA file).
 * </ul>
 *
 * The port defaults to {@value #DEFAULT_PORT}; an IPv6 host goes in brackets ({@code [::1]:50051}).
 * Nothing may follow the port but one optional {@code /}.
 *
 * @param host the host name or IP address (IPv6 without brackets)
 * @param port the TCP port
 * @param tls whether the connection uses TLS
 */
public record Endpoint(String host, int port, boolean tls) {
  /** The gateway's default public port. */
  public static final int DEFAULT_PORT = 50051;

  /** Checks the parts. */
  public Endpoint {
    Objects.requireNonNull(host, "host");
    if (host.isEmpty()) {
      throw new IllegalArgumentException("endpoint host is empty");
    }
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("endpoint port " + port + " must be 1..=65535");
    }
  }

  /**
   * Parses {@code text}.
   *
   * @param text the endpoint, as in {@code ENTROPY_ENDPOINT}
   * @param haveCaFile whether a CA file was given (which makes a scheme-less endpoint TLS even on
   *     loopback)
   * @return the endpoint
   * @throws IllegalArgumentException naming the endpoint and what is wrong with it
   */
  public static Endpoint parse(String text, boolean haveCaFile) {
    Objects.requireNonNull(text, "endpoint");
    String rest = text;
    Boolean tls = null; // decided by the scheme, else by the host below
    int scheme = text.indexOf("://");
    if (scheme >= 0) {
      String name = text.substring(0, scheme);
      rest = text.substring(scheme + 3);
      if (name.equals("https")) {
        tls = true;
      } else if (name.equals("http")) {
        if (haveCaFile) {
          throw bad(text, "http:// is plaintext, but a CA file was given: use https://");
        }
        tls = false;
      } else {
        throw bad(text, "the scheme must be http:// or https:// (or none)");
      }
    }
    if (rest.endsWith("/")) {
      rest = rest.substring(0, rest.length() - 1);
    }
    if (rest.contains("/")) {
      throw bad(text, "no path may follow host:port");
    }
    String host;
    String port = null;
    if (rest.startsWith("[")) {
      int close = rest.indexOf(']');
      if (close < 0) {
        throw bad(text, "an IPv6 address needs its closing ]");
      }
      host = rest.substring(1, close);
      String after = rest.substring(close + 1);
      if (!after.isEmpty()) {
        if (!after.startsWith(":")) {
          throw bad(text, "only :port may follow the host");
        }
        port = after.substring(1);
      }
      if (host.isEmpty() || !host.chars().allMatch(c -> c == ':' || c == '.' || isHex(c))) {
        throw bad(text, "not an IPv6 address in brackets");
      }
    } else {
      int colon = rest.lastIndexOf(':');
      host = colon < 0 ? rest : rest.substring(0, colon);
      port = colon < 0 ? null : rest.substring(colon + 1);
      if (host.isEmpty()) {
        throw bad(text, "no host (expected host:port, http://host:port or https://host:port)");
      }
      if (!host.chars().allMatch(c -> Character.isLetterOrDigit(c) && c < 128 || c == '.' || c == '-' || c == '_')) {
        throw bad(text, "the host may hold only letters, digits, '.', '-' and '_' (no path, no spaces)");
      }
    }
    int number = DEFAULT_PORT;
    if (port != null) {
      if (port.isEmpty() || port.length() > 5 || !port.chars().allMatch(c -> c >= '0' && c <= '9')) {
        throw bad(text, "the port must be a number 1..=65535");
      }
      number = Integer.parseInt(port);
      if (number < 1 || number > 65535) {
        throw bad(text, "the port must be a number 1..=65535");
      }
    }
    if (tls == null) {
      tls = haveCaFile || !isLoopback(host);
    }
    return new Endpoint(host, number, tls);
  }

  /** {@code localhost}, an IPv4 address in 127.0.0.0/8, or {@code ::1}. */
  static boolean isLoopback(String host) {
    if (host.equalsIgnoreCase("localhost") || host.equals("::1")) {
      return true;
    }
    String[] parts = host.split("\\.", -1);
    if (parts.length != 4 || !parts[0].equals("127")) {
      return false;
    }
    for (String p : parts) {
      if (p.isEmpty() || p.length() > 3 || !p.chars().allMatch(c -> c >= '0' && c <= '9')
          || Integer.parseInt(p) > 255) {
        return false;
      }
    }
    return true;
  }

  private static boolean isHex(int c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  }

  private static IllegalArgumentException bad(String text, String why) {
    return new IllegalArgumentException("endpoint \"" + text + "\": " + why);
  }

  /** The endpoint as {@code http://host:port} or {@code https://host:port}. */
  @Override
  public String toString() {
    String h = host.contains(":") ? "[" + host + "]" : host;
    return (tls ? "https://" : "http://") + h + ":" + port;
  }
}
