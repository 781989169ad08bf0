"""The client's value types carry every field the gateway sends: a GetStatusResponse field that
`Status` does not map fails here, so the Python client cannot drift from the proto (the Node
client has the same check)."""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor

from entropy_diode._gen.entropy.v1 import entropy_pb2 as pb
from entropy_diode._gen.entropy.v1 import provenance_pb2 as ppb
from entropy_diode.types import provenance_from_pb, status_from_pb


def filled_status() -> pb.GetStatusResponse:
    """A response with every scalar field set to a value of its own (none at its default)."""
    msg = pb.GetStatusResponse()
    for i, field in enumerate(pb.GetStatusResponse.DESCRIPTOR.fields, start=1):
        if field.is_repeated:
            continue
        if field.type == FieldDescriptor.TYPE_BOOL:
            setattr(msg, field.name, True)
        elif field.type == FieldDescriptor.TYPE_STRING:
            setattr(msg, field.name, f"value of {field.name}")
        else:
            setattr(msg, field.name, 1000 + i)
    msg.sources.add(collector_id="c1", name="qrng", contributed_bytes_total=7)
    msg.pool_by_class.add(kinds=[1], bytes=9)
    return msg


def test_every_status_field_is_mapped_with_its_value() -> None:
    msg = filled_status()
    status = status_from_pb(msg)
    for field in pb.GetStatusResponse.DESCRIPTOR.fields:
        assert hasattr(status, field.name), f"Status lacks {field.name}"
        if not field.is_repeated:
            assert getattr(status, field.name) == getattr(msg, field.name), field.name
    assert [s.collector_id for s in status.sources] == ["c1"]
    assert [c.bytes for c in status.pool_by_class] == [9]


def test_every_provenance_field_is_mapped_with_its_value() -> None:
    msg = ppb.DrawProvenance(
        kinds=[1, 3],
        mixed=True,
        collector_ids=["c1", "c2"],
        first_chunk=ppb.ChunkRef(collector_id="c1", epoch=1, sequence=2, signed_at_unix_ms=3),
        last_chunk=ppb.ChunkRef(collector_id="c2", epoch=4, sequence=5, signed_at_unix_ms=6),
        chunk_count=7,
        oldest_byte_age_ms=8,
        construction=2,
        drbg=ppb.DrbgLabel(
            mechanism=1,
            security_strength_bits=256,
            instance_id="00112233445566778899aabbccddeeff",
            reseed_count=9,
            bytes_since_reseed=10,
            seed_bytes=11,
            prediction_resistance=True,
        ),
    )
    p = provenance_from_pb(msg)
    for field in ppb.DrawProvenance.DESCRIPTOR.fields:
        assert hasattr(p, field.name), f"Provenance lacks {field.name}"
    assert p.drbg is not None
    for field in ppb.DrbgLabel.DESCRIPTOR.fields:
        assert getattr(p.drbg, field.name) == getattr(msg.drbg, field.name), field.name
    assert (p.construction, p.chunk_count, p.oldest_byte_age_ms) == (2, 7, 8)
