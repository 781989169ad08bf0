"""The client's value types carry every field the gateway sends: a GetStatusResponse field that
`Status` does not map fails here, so the Python client cannot drift from the proto (the Node
client has the same check)."""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor

from entropy_diode._gen.entropy.v1 import entropy_pb2 as pb
from entropy_diode.types import status_from_pb


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
