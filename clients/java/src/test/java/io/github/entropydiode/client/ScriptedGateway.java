package io.github.entropydiode.client;

import com.google.protobuf.ByteString;
import entropy.v1.Entropy.CheckQualityRequest;
import entropy.v1.Entropy.CheckQualityResponse;
import entropy.v1.Entropy.GetFloatsRequest;
import entropy.v1.Entropy.GetFloatsResponse;
import entropy.v1.Entropy.GetIntegersRequest;
import entropy.v1.Entropy.GetIntegersResponse;
import entropy.v1.Entropy.GetRandomRequest;
import entropy.v1.Entropy.GetRandomResponse;
import entropy.v1.Entropy.GetStatusRequest;
import entropy.v1.Entropy.GetStatusResponse;
import entropy.v1.Entropy.GetUuidsRequest;
import entropy.v1.Entropy.GetUuidsResponse;
import entropy.v1.Entropy.StreamRandomRequest;
import entropy.v1.Entropy.StreamRandomResponse;
import entropy.v1.EntropyServiceGrpc;
import entropy.v1.Provenance.ChunkRef;
import entropy.v1.Provenance.DrawProvenance;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * A scripted EntropyService on a free loopback port, for what a live gateway cannot be made to do
 * on cue: answer with a given status, send a given provenance or report, fail a stream after k
 * messages. It records the accept_kinds of every call.
 */
final class ScriptedGateway extends EntropyServiceGrpc.EntropyServiceImplBase
    implements AutoCloseable {
  /** One StreamRandom call: send {@code messages} (-1: all asked for), then end with {@code end}. */
  record Step(int messages, Status end) {}

  private static final SecureRandom RANDOM = new SecureRandom();

  /** Attached to every GetRandom response; stream messages get it with both chunks' sequence set
   * to the message's number in its stream. Null: none. */
  volatile DrawProvenance provenance;
  volatile CheckQualityResponse quality;
  volatile GetStatusResponse status;
  /** The answer to every unary call, when set. */
  volatile Status unaryError;
  final Deque<Step> script = new ArrayDeque<>();
  /** "Method:[numbers]" per call, in order. */
  final List<String> kinds = Collections.synchronizedList(new ArrayList<>());

  private final Server server;

  ScriptedGateway() throws IOException {
    server =
        Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
            .addService(this)
            .build()
            .start();
  }

  EntropyClient client(SourceKind... acceptKinds) {
    return EntropyClient.builder()
        .endpoint("127.0.0.1:" + server.getPort())
        .apiKey("k")
        .acceptKinds(acceptKinds)
        .build();
  }

  @Override
  public void close() {
    try {
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void record(String method, List<Integer> numbers) {
    kinds.add(method + ":" + numbers);
  }

  private boolean failed(StreamObserver<?> out) {
    Status error = unaryError;
    if (error != null) {
      out.onError(error.asRuntimeException());
      return true;
    }
    return false;
  }

  private static ByteString random(int n) {
    byte[] b = new byte[n];
    RANDOM.nextBytes(b);
    return ByteString.copyFrom(b);
  }

  @Override
  public void getRandom(GetRandomRequest req, StreamObserver<GetRandomResponse> out) {
    record("GetRandom", req.getAcceptKindsValueList());
    if (failed(out)) {
      return;
    }
    GetRandomResponse.Builder b = GetRandomResponse.newBuilder().setData(random(req.getNumBytes()));
    if (provenance != null) {
      b.setProvenance(provenance);
    }
    out.onNext(b.build());
    out.onCompleted();
  }

  @Override
  public void getIntegers(GetIntegersRequest req, StreamObserver<GetIntegersResponse> out) {
    record("GetIntegers", req.getAcceptKindsValueList());
    if (!failed(out)) {
      GetIntegersResponse.Builder b = GetIntegersResponse.newBuilder();
      for (int i = 0; i < req.getCount(); i++) {
        b.addValues(req.getMin());
      }
      out.onNext(b.build());
      out.onCompleted();
    }
  }

  @Override
  public void getFloats(GetFloatsRequest req, StreamObserver<GetFloatsResponse> out) {
    record("GetFloats", req.getAcceptKindsValueList());
    if (!failed(out)) {
      GetFloatsResponse.Builder b = GetFloatsResponse.newBuilder();
      for (int i = 0; i < req.getCount(); i++) {
        b.addValues(0.5);
      }
      out.onNext(b.build());
      out.onCompleted();
    }
  }

  @Override
  public void getUuids(GetUuidsRequest req, StreamObserver<GetUuidsResponse> out) {
    record("GetUuids", req.getAcceptKindsValueList());
    if (!failed(out)) {
      GetUuidsResponse.Builder b = GetUuidsResponse.newBuilder();
      for (int i = 0; i < req.getCount(); i++) {
        b.addUuids(UUID.randomUUID().toString());
      }
      out.onNext(b.build());
      out.onCompleted();
    }
  }

  @Override
  public void checkQuality(CheckQualityRequest req, StreamObserver<CheckQualityResponse> out) {
    record("CheckQuality", req.getAcceptKindsValueList());
    if (failed(out)) {
      return;
    }
    CheckQualityResponse q = quality;
    if (q == null) {
      out.onError(Status.UNIMPLEMENTED.withDescription("no scripted report").asRuntimeException());
      return;
    }
    out.onNext(q);
    out.onCompleted();
  }

  @Override
  public void getStatus(GetStatusRequest req, StreamObserver<GetStatusResponse> out) {
    GetStatusResponse s = status;
    if (s == null) {
      out.onError(Status.UNIMPLEMENTED.withDescription("no scripted status").asRuntimeException());
      return;
    }
    out.onNext(s);
    out.onCompleted();
  }

  @Override
  public void streamRandom(StreamRandomRequest req, StreamObserver<StreamRandomResponse> out) {
    record("StreamRandom", req.getAcceptKindsValueList());
    Step step;
    synchronized (script) {
      step = script.isEmpty() ? new Step(-1, Status.OK) : script.poll();
    }
    int size = req.getChunkBytes() == 0 ? 16384 : req.getChunkBytes();
    long left = req.getTotalBytes();
    for (int i = 0; step.messages() < 0 || i < step.messages(); i++) {
      if (req.getTotalBytes() > 0 && left == 0) {
        break;
      }
      if (req.getTotalBytes() == 0 && i >= 10_000) {
        break;
      }
      int n = req.getTotalBytes() > 0 ? (int) Math.min(size, left) : size;
      left -= n;
      StreamRandomResponse.Builder b = StreamRandomResponse.newBuilder().setData(random(n));
      if (provenance != null) {
        ChunkRef first = provenance.getFirstChunk().toBuilder().setSequence(i).build();
        ChunkRef last = provenance.getLastChunk().toBuilder().setSequence(i).build();
        b.setProvenance(provenance.toBuilder().setFirstChunk(first).setLastChunk(last));
      }
      out.onNext(b.build());
    }
    if (step.end().isOk()) {
      out.onCompleted();
    } else {
      out.onError(step.end().asRuntimeException());
    }
  }
}
