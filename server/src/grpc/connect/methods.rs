//! The public services' methods as Connect sees them (EntropyService's and ReceiptLogService's):
//! whether each streams, and how its request and response cross between Connect's JSON and
//! gRPC's protobuf (the proto3 JSON mapping, from pbjson's serde impls in `entropy-proto`'s
//! `json` feature).
//!
//! Binary Connect needs no conversion (the protobuf bytes are the same); JSON requests are
//! parsed into the message and encoded as protobuf, JSON responses decoded from protobuf and
//! written as JSON. A test checks the tables against the services' descriptors, so a new method
//! cannot be left out.

use entropy_proto::v1::{
    CheckQualityRequest, CheckQualityResponse, GetConsistencyProofRequest,
    GetConsistencyProofResponse, GetFloatsRequest, GetFloatsResponse, GetInclusionProofRequest,
    GetInclusionProofResponse, GetIntegersRequest, GetIntegersResponse, GetPublicKeyRequest,
    GetPublicKeyResponse, GetRandomRequest, GetRandomResponse, GetSignedTreeHeadRequest,
    GetSignedTreeHeadResponse, GetStatusRequest, GetStatusResponse, GetUsageRequest,
    GetUsageResponse, GetUuidsRequest, GetUuidsResponse, ListReceiptsRequest, ListReceiptsResponse,
    StreamRandomRequest, StreamRandomResponse,
};
use prost::Message;

/// One method of EntropyService.
#[derive(Debug)]
pub(super) struct Method {
    /// Its name, the last segment of its path.
    pub(super) name: &'static str,
    /// Server streaming (else unary).
    pub(super) streaming: bool,
    /// The request type's Rust path, for messages about it ([`Method::request_type`]).
    request_type_path: fn() -> &'static str,
    /// A JSON request as protobuf.
    pub(super) request_from_json: fn(&[u8]) -> Result<Vec<u8>, serde_json::Error>,
    /// A protobuf response as JSON.
    pub(super) response_to_json: fn(&[u8]) -> Result<Vec<u8>, ToJsonError>,
}

/// Why a response message could not be written as JSON (a fault of the gateway: its own
/// messages always decode).
#[derive(Debug, thiserror::Error)]
pub(super) enum ToJsonError {
    /// The protobuf did not decode.
    #[error("response message does not decode: {0}")]
    Decode(#[from] prost::DecodeError),
    /// serde_json failed.
    #[error("response message does not serialize: {0}")]
    Json(#[from] serde_json::Error),
}

impl Method {
    /// The request message's name in the proto package (`GetRandomRequest`).
    pub(super) fn request_type(&self) -> &'static str {
        let path = (self.request_type_path)();
        path.rsplit("::").next().unwrap_or(path)
    }
}

/// The method called at `path` (`/entropy.v1.<Service>/<name>`), if it is one.
pub(super) fn find(path: &str) -> Option<&'static Method> {
    SERVICES.iter().find_map(|(prefix, methods)| {
        let name = path.strip_prefix(prefix)?;
        methods.iter().find(|m| m.name == name)
    })
}

/// The service a path names (`entropy.v1.EntropyService`), for a message about a method it
/// does not have.
pub(super) fn service_of(path: &str) -> &str {
    path.trim_start_matches('/').split('/').next().unwrap_or(path)
}

/// The path every EntropyService method's starts with.
pub(super) const SERVICE_PREFIX: &str = "/entropy.v1.EntropyService/";
/// The path every ReceiptLogService method's starts with.
pub(super) const RECEIPT_LOG_PREFIX: &str = "/entropy.v1.ReceiptLogService/";

/// Each service Connect carries, with its methods.
const SERVICES: &[(&str, &[Method])] =
    &[(SERVICE_PREFIX, METHODS), (RECEIPT_LOG_PREFIX, RECEIPT_LOG_METHODS)];

/// Every method of ReceiptLogService.
const RECEIPT_LOG_METHODS: &[Method] = &[
    method::<GetPublicKeyRequest, GetPublicKeyResponse>("GetPublicKey", false),
    method::<GetSignedTreeHeadRequest, GetSignedTreeHeadResponse>("GetSignedTreeHead", false),
    method::<GetInclusionProofRequest, GetInclusionProofResponse>("GetInclusionProof", false),
    method::<GetConsistencyProofRequest, GetConsistencyProofResponse>("GetConsistencyProof", false),
    method::<ListReceiptsRequest, ListReceiptsResponse>("ListReceipts", false),
];

/// Every method of EntropyService.
const METHODS: &[Method] = &[
    method::<GetRandomRequest, GetRandomResponse>("GetRandom", false),
    method::<StreamRandomRequest, StreamRandomResponse>("StreamRandom", true),
    method::<GetIntegersRequest, GetIntegersResponse>("GetIntegers", false),
    method::<GetFloatsRequest, GetFloatsResponse>("GetFloats", false),
    method::<GetUuidsRequest, GetUuidsResponse>("GetUuids", false),
    method::<GetStatusRequest, GetStatusResponse>("GetStatus", false),
    method::<CheckQualityRequest, CheckQualityResponse>("CheckQuality", false),
    method::<GetUsageRequest, GetUsageResponse>("GetUsage", false),
];

const fn method<Req, Res>(name: &'static str, streaming: bool) -> Method
where
    Req: Message + Default + serde::de::DeserializeOwned,
    Res: Message + Default + serde::Serialize,
{
    Method {
        name,
        streaming,
        request_type_path: std::any::type_name::<Req>,
        request_from_json: from_json::<Req>,
        response_to_json: to_json::<Res>,
    }
}

/// A JSON request as protobuf; an empty body is the empty message (as `curl -d ''` sends it).
fn from_json<M: Message + Default + serde::de::DeserializeOwned>(
    json: &[u8],
) -> Result<Vec<u8>, serde_json::Error> {
    let message: M =
        if json.trim_ascii().is_empty() { M::default() } else { serde_json::from_slice(json)? };
    Ok(message.encode_to_vec())
}

/// A protobuf response as JSON.
fn to_json<M: Message + Default + serde::Serialize>(proto: &[u8]) -> Result<Vec<u8>, ToJsonError> {
    Ok(serde_json::to_vec(&M::decode(proto)?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_name_every_method_of_the_services_with_its_shape() {
        let set = prost_types::FileDescriptorSet::decode(entropy_proto::FILE_DESCRIPTOR_SET)
            .expect("descriptors");
        for (prefix, methods) in SERVICES {
            let name = service_of(prefix).trim_start_matches("entropy.v1.");
            let service = set
                .file
                .iter()
                .flat_map(|f| &f.service)
                .find(|s| s.name() == name)
                .unwrap_or_else(|| panic!("{name} is described"));
            assert_eq!(service.method.len(), methods.len(), "{name}");
            for described in &service.method {
                let path = format!("{prefix}{}", described.name());
                let ours = find(&path).unwrap_or_else(|| panic!("{path} is not in the table"));
                assert_eq!(ours.streaming, described.server_streaming(), "{path}");
                assert!(!described.client_streaming(), "{path}: Connect here takes one request");
                let request = format!(".entropy.v1.{}", ours.request_type());
                assert_eq!(request, described.input_type());
            }
        }
        // Every public service but health and reflection is carried.
        let public: Vec<&str> = set
            .file
            .iter()
            .filter(|f| f.name() != "entropy/v1/ingest.proto")
            .flat_map(|f| &f.service)
            .map(|s| s.name())
            .collect();
        assert_eq!(public.len(), SERVICES.len(), "{public:?}");
        assert!(find("/entropy.v1.EntropyService/Nope").is_none());
        assert!(find("/entropy.v1.IngestService/Publish").is_none());
    }

    #[test]
    fn json_follows_the_proto3_mapping_both_ways() {
        let get = find("/entropy.v1.EntropyService/GetRandom").expect("GetRandom");
        // camelCase or the proto name in, enums by name or number.
        for json in
            [r#"{"numBytes": 4, "encoding": "ENCODING_HEX"}"#, r#"{"num_bytes": 4, "encoding": 1}"#]
        {
            let proto = (get.request_from_json)(json.as_bytes()).expect(json);
            let request = GetRandomRequest::decode(&proto[..]).expect("decodes");
            assert_eq!((request.num_bytes, request.encoding), (4, 1), "{json}");
        }
        assert_eq!((get.request_from_json)(b"").expect("empty body"), Vec::<u8>::new());
        let err = (get.request_from_json)(br#"{"numBytes": "x"}"#).expect_err("not a number");
        assert!(err.to_string().contains("line 1"), "{err}");
        let err = (get.request_from_json)(br#"{"bytes": 4}"#).expect_err("unknown field");
        assert!(err.to_string().contains("bytes"), "{err}");

        // bytes as base64, 64-bit integers as strings, defaults left out.
        let response = GetRandomResponse { data: vec![0xff, 0, 1], ..Default::default() };
        let json = (get.response_to_json)(&response.encode_to_vec()).expect("to JSON");
        assert_eq!(std::str::from_utf8(&json).unwrap(), r#"{"data":"/wAB"}"#);
        let ints = find("/entropy.v1.EntropyService/GetIntegers").expect("GetIntegers");
        let response = GetIntegersResponse { values: vec![-1, i64::MAX], ..Default::default() };
        let json = (ints.response_to_json)(&response.encode_to_vec()).expect("to JSON");
        assert_eq!(
            std::str::from_utf8(&json).unwrap(),
            r#"{"values":["-1","9223372036854775807"]}"#
        );
    }
}
