//! EntropyService's methods as Connect sees them: whether each streams, and how its request and
//! response cross between Connect's JSON and gRPC's protobuf (the proto3 JSON mapping, from
//! pbjson's serde impls in `entropy-proto`'s `json` feature).
//!
//! Binary Connect needs no conversion (the protobuf bytes are the same); JSON requests are
//! parsed into the message and encoded as protobuf, JSON responses decoded from protobuf and
//! written as JSON. A test checks the table against the service's descriptor, so a new method
//! cannot be left out.

use entropy_proto::v1::{
    CheckQualityRequest, CheckQualityResponse, GetFloatsRequest, GetFloatsResponse,
    GetIntegersRequest, GetIntegersResponse, GetRandomRequest, GetRandomResponse, GetStatusRequest,
    GetStatusResponse, GetUsageRequest, GetUsageResponse, GetUuidsRequest, GetUuidsResponse,
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

/// The method called at `path` (`/entropy.v1.EntropyService/<name>`), if it is one.
pub(super) fn find(path: &str) -> Option<&'static Method> {
    let name = path.strip_prefix(SERVICE_PREFIX)?;
    METHODS.iter().find(|m| m.name == name)
}

/// The path every EntropyService method's starts with.
pub(super) const SERVICE_PREFIX: &str = "/entropy.v1.EntropyService/";

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
    fn the_table_names_every_method_of_the_service_with_its_shape() {
        let set = prost_types::FileDescriptorSet::decode(entropy_proto::FILE_DESCRIPTOR_SET)
            .expect("descriptors");
        let service = set
            .file
            .iter()
            .flat_map(|f| &f.service)
            .find(|s| s.name() == "EntropyService")
            .expect("EntropyService");
        assert_eq!(service.method.len(), METHODS.len());
        for described in &service.method {
            let path = format!("{SERVICE_PREFIX}{}", described.name());
            let ours = find(&path).unwrap_or_else(|| panic!("{path} is not in the table"));
            assert_eq!(ours.streaming, described.server_streaming(), "{path}");
            assert!(!described.client_streaming(), "{path}: Connect here takes one request");
            assert_eq!(format!(".entropy.v1.{}", ours.request_type()), described.input_type());
        }
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
