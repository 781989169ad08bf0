//! The diode's contract, read from the compiled descriptors: the only way into the gateway from
//! the collector is one unary call whose reply has no fields, so no data can travel back to
//! the inside however the gateway is compromised (short of the gRPC status and its message).

use prost::Message;
use prost_types::FileDescriptorSet;

fn descriptors() -> FileDescriptorSet {
    FileDescriptorSet::decode(entropy_proto::FILE_DESCRIPTOR_SET).expect("descriptor set")
}

#[test]
fn ingest_is_one_unary_call_whose_reply_carries_no_data() {
    let set = descriptors();
    let file = set
        .file
        .iter()
        .find(|f| f.service.iter().any(|s| s.name() == "IngestService"))
        .expect("IngestService is defined");
    let service = file.service.iter().find(|s| s.name() == "IngestService").unwrap();
    assert_eq!(service.method.len(), 1, "IngestService has exactly one method");
    let publish = &service.method[0];
    assert_eq!(publish.name(), "Publish");
    assert!(!publish.client_streaming() && !publish.server_streaming(), "Publish is unary");
    assert_eq!(publish.output_type(), ".entropy.v1.PublishResponse");
    let reply = file
        .message_type
        .iter()
        .find(|m| m.name() == "PublishResponse")
        .expect("PublishResponse is defined");
    assert!(reply.field.is_empty(), "PublishResponse has no fields: {:?}", reply.field);
    assert!(reply.nested_type.is_empty() && reply.oneof_decl.is_empty());
}
