// The Node transport: a @grpc/grpc-js client made from the service descriptor protoc-gen-es
// generates (src/gen), with protobuf-es encoding each message. The browser client (../web) uses
// the same generated code with @connectrpc/connect-web, so both clients come from one generator.

import {
  create,
  type DescMessage,
  fromBinary,
  type MessageInitShape,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import {
  type CallOptions,
  type ChannelCredentials,
  type ChannelOptions,
  type Client,
  type ClientReadableStream,
  type ClientUnaryCall,
  makeGenericClientConstructor,
  type Metadata,
  type MethodDefinition,
  type ServiceDefinition,
  type ServiceError,
} from "@grpc/grpc-js";

/** A unary method as grpc-js exposes it: request (a message or its init shape), metadata, call
 * options, callback. */
export type UnaryMethod<I extends DescMessage, O extends DescMessage> = (
  req: MessageInitShape<I>,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (err: ServiceError | null, res: MessageShape<O>) => void,
) => ClientUnaryCall;

/** A server-streaming method as grpc-js exposes it: a readable stream of messages. */
export type ServerStreamingMethod<I extends DescMessage, O extends DescMessage> = (
  req: MessageInitShape<I>,
  metadata: Metadata,
  options?: Partial<CallOptions>,
) => ClientReadableStream<MessageShape<O>>;

/** The grpc-js client of a service: one method per RPC, named as protobuf-es names them
 * (`getRandom`), plus grpc-js's own (`close`, `getChannel`, ...). */
export type GrpcClient<S extends GenServiceMethods> = Client & {
  [K in keyof S]: S[K]["methodKind"] extends "unary"
    ? UnaryMethod<S[K]["input"], S[K]["output"]>
    : S[K]["methodKind"] extends "server_streaming"
      ? ServerStreamingMethod<S[K]["input"], S[K]["output"]>
      : never;
};

/** The grpc-js service definition of a generated service: paths, streaming kinds, and protobuf-es
 * (de)serializers. Clients and servers (the tests' scripted one) are made from it. */
export function serviceDefinition<S extends GenServiceMethods>(service: GenService<S>): ServiceDefinition {
  const definition: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) {
    const { input, output, methodKind } = method;
    definition[method.localName] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream: methodKind === "client_streaming" || methodKind === "bidi_streaming",
      responseStream: methodKind === "server_streaming" || methodKind === "bidi_streaming",
      requestSerialize: (m) => Buffer.from(toBinary(input, create(input, m as MessageInitShape<DescMessage>))),
      requestDeserialize: (b) => fromBinary(input, b),
      responseSerialize: (m) => Buffer.from(toBinary(output, create(output, m as MessageInitShape<DescMessage>))),
      responseDeserialize: (b) => fromBinary(output, b),
    };
  }
  return definition;
}

/** A grpc-js client of `service` at `target` (grpc-js syntax: `host:port`). */
export function grpcClient<S extends GenServiceMethods>(
  service: GenService<S>,
  target: string,
  credentials: ChannelCredentials,
  options: ChannelOptions,
): GrpcClient<S> {
  const Constructor = makeGenericClientConstructor(serviceDefinition(service), service.typeName);
  return new Constructor(target, credentials, options) as unknown as GrpcClient<S>;
}
