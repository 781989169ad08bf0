package io.github.entropydiode.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * The Java client's conformance program (see ../conformance/README.md): runs every case against
 * the gateway at --endpoint (key in ENTROPY_API_KEY) and prints one JSON line per case. It
 * reports what it observed; the driver judges it, the same way for every language.
 *
 * <pre>mvn -B -q -DskipTests package
 * java -cp "target/test-classes:target/classes:$(cat target/runtime-classpath.txt)" \
 *     io.github.entropydiode.client.Conformance --endpoint H:P --stall-endpoint H:P2</pre>
 */
public final class Conformance {
  private static final int MIB = 1 << 20;

  private Conformance() {}

  /** Runs the cases.
   *
   * @param args --endpoint and --stall-endpoint
   */
  public static void main(String[] args) throws Exception {
    String mode = args.length > 0 && !args[0].startsWith("--") ? args[0] : "cases";
    Map<String, String> flags = new LinkedHashMap<>();
    for (int i = mode.equals("cases") ? 0 : 1; i + 1 < args.length; i += 2) {
      flags.put(args[i], args[i + 1]);
    }
    switch (mode) {
      case "cases" -> cases(flags);
      case "reader" -> reader(flags);
      case "throughput" -> throughput(flags);
      default -> {
        System.err.println("unknown mode " + mode + ": cases (default), reader or throughput");
        System.exit(2);
      }
    }
  }

  /**
   * The restart run's reader: exactly --total bytes through {@link RandomStream} in reads of
   * --chunk-bytes, sleeping --pace-ms after each, every byte appended to --out as it arrives.
   */
  private static void reader(Map<String, String> flags) throws Exception {
    long total = Long.parseLong(required(flags, "--total"));
    int chunk = Integer.parseInt(required(flags, "--chunk-bytes"));
    long pace = Long.parseLong(flags.getOrDefault("--pace-ms", "0"));
    StreamOptions options = StreamOptions.defaults().withChunkBytes(chunk);
    if (flags.containsKey("--budget-ms")) {
      options = options.withReconnectBudget(Duration.ofMillis(Long.parseLong(flags.get("--budget-ms"))));
    }
    long got = 0;
    String code = "\"OK\"";
    String error = "";
    int reconnects = 0;
    try (EntropyClient c = EntropyClient.builder().endpoint(required(flags, "--endpoint")).build();
        RandomStream in = c.stream(total, options);
        java.io.OutputStream out =
            java.nio.file.Files.newOutputStream(java.nio.file.Path.of(required(flags, "--out")))) {
      byte[] buf = new byte[chunk];
      try {
        int n;
        while ((n = in.readNBytes(buf, 0, buf.length)) > 0) {
          out.write(buf, 0, n);
          out.flush();
          got += n;
          if (pace > 0) {
            Thread.sleep(pace);
          }
        }
      } catch (java.io.IOException e) {
        code = e.getCause() instanceof EntropyException ee ? quote(ee.code().name()) : "\"CLIENT_ERROR\"";
        error = e.getMessage();
      }
      reconnects = in.reconnects();
    }
    System.out.println("{\"code\": " + code + ", \"bytes\": " + got + ", \"reconnects\": "
        + reconnects + ", \"error\": " + quote(error == null ? "" : error) + "}");
  }

  /** Reads --total bytes as fast as it can, through the library's reader or the raw stub. */
  private static void throughput(Map<String, String> flags) throws Exception {
    long total = Long.parseLong(required(flags, "--total"));
    int chunk = Integer.parseInt(required(flags, "--chunk-bytes"));
    String endpoint = required(flags, "--endpoint");
    long got = 0;
    long start = System.nanoTime();
    if (flags.getOrDefault("--mode", "reader").equals("stub")) {
      Endpoint e = Endpoint.parse(endpoint, false);
      io.grpc.Metadata headers = new io.grpc.Metadata();
      headers.put(io.grpc.Metadata.Key.of("authorization", io.grpc.Metadata.ASCII_STRING_MARSHALLER),
          "Bearer " + System.getenv("ENTROPY_API_KEY"));
      io.grpc.ManagedChannel channel =
          io.grpc.ManagedChannelBuilder.forAddress(e.host(), e.port()).usePlaintext().build();
      try {
        var stub = entropy.v1.EntropyServiceGrpc.newBlockingStub(channel)
            .withInterceptors(io.grpc.stub.MetadataUtils.newAttachHeadersInterceptor(headers));
        var replies = stub.streamRandom(entropy.v1.Entropy.StreamRandomRequest.newBuilder()
            .setChunkBytes(chunk).setTotalBytes(total).build());
        while (replies.hasNext()) {
          got += replies.next().getData().size();
        }
      } finally {
        channel.shutdownNow();
      }
    } else {
      try (EntropyClient c = EntropyClient.builder().endpoint(endpoint).build();
          RandomStream in = c.stream(total, StreamOptions.defaults().withChunkBytes(chunk))) {
        byte[] buf = new byte[chunk];
        int n;
        while ((n = in.read(buf, 0, buf.length)) > 0) {
          got += n;
        }
      }
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    System.out.println("{\"bytes\": " + got + ", \"seconds\": " + seconds + "}");
  }

  private static void cases(Map<String, String> flags) throws Exception {
    String endpoint = required(flags, "--endpoint");
    String stall = required(flags, "--stall-endpoint");
    String key = System.getenv("ENTROPY_API_KEY");
    try (EntropyClient c = EntropyClient.builder().endpoint(endpoint).apiKey(key).build();
        EntropyClient wrong = EntropyClient.builder().endpoint(endpoint).apiKey("wrong-" + key).build();
        EntropyClient stalled =
            EntropyClient.builder().endpoint(stall).apiKey(key).timeout(Duration.ofMillis(300)).build()) {
      run("get_random_32", () -> bytes(c.getBytes(32)));
      run("num_bytes_zero", () -> bytes(c.getBytes(0)));
      run("num_bytes_too_big", () -> bytes(c.getBytes(MIB + 1)));
      run("integers_min_above_max", () -> numbers(c.getIntegers(5, 1, 1), false));
      run("dice", () -> numbers(c.getIntegers(1, 6, 1000), false));
      run("int64_full_range", () -> numbers(c.getIntegers(Long.MIN_VALUE, Long.MAX_VALUE, 100), true));
      run("floats", () -> {
        List<String> v = new ArrayList<>();
        for (double f : c.getFloats(1000)) {
          v.add(Double.toString(f));
        }
        return "\"values\": [" + String.join(", ", v) + "]";
      });
      run("uuids", () -> {
        List<String> v = new ArrayList<>();
        c.getUuids(100).forEach(u -> v.add(quote(u.toString())));
        return "\"values\": [" + String.join(", ", v) + "]";
      });
      run("stream_1mib", () -> {
        try (RandomStream in = c.stream(MIB, StreamOptions.defaults().withChunkBytes(64 << 10))) {
          return bytes(in.readAllBytes());
        }
      });
      run("wrong_key", () -> bytes(wrong.getBytes(32)));
      run("status", () -> "\"pool_capacity_bytes\": " + quote(Long.toString(c.status().poolCapacityBytes())));
      run("deadline", () -> bytes(stalled.getBytes(32)));
    }
  }

  private static void run(String name, Callable<String> observe) {
    String out;
    try {
      out = "\"code\": \"OK\", " + observe.call();
    } catch (EntropyException e) {
      out = "\"code\": " + quote(e.code().name()) + ", \"error\": " + quote(e.getClass().getSimpleName() + ": " + e.details());
    } catch (Exception e) {
      EntropyException cause = e.getCause() instanceof EntropyException ee ? ee : null;
      out = cause != null
          ? "\"code\": " + quote(cause.code().name()) + ", \"error\": " + quote(e.toString())
          : "\"code\": \"CLIENT_ERROR\", \"error\": " + quote(e.toString());
    }
    System.out.println("{\"case\": " + quote(name) + ", " + out + "}");
    System.out.flush();
  }

  private static String bytes(byte[] data) {
    return "\"data_b64\": " + quote(Base64.getEncoder().encodeToString(data));
  }

  /** Integers as JSON numbers, or as decimal strings (JSON numbers cannot hold every int64). */
  private static String numbers(long[] values, boolean asStrings) {
    List<String> v = new ArrayList<>();
    for (long x : values) {
      v.add(asStrings ? quote(Long.toString(x)) : Long.toString(x));
    }
    return "\"values\": [" + String.join(", ", v) + "]";
  }

  private static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char ch : s.toCharArray()) {
      switch (ch) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        default -> {
          if (ch < 0x20) {
            b.append(String.format("\\u%04x", (int) ch));
          } else {
            b.append(ch);
          }
        }
      }
    }
    return b.append('"').toString();
  }

  private static String required(Map<String, String> flags, String name) {
    String v = flags.get(name);
    if (v == null) {
      System.err.println("usage: Conformance --endpoint HOST:PORT --stall-endpoint HOST:PORT");
      System.exit(2);
    }
    return v;
  }
}
