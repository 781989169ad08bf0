"""The sync and asyncio clients stay twins: the same public methods with the same parameters,
defaults, annotations and docstrings (only `async` and the reader class differ), each unary
method sending what `_calls.Calls` builds, and on one fake gateway both return equal values.
A method added to, or changed in, one client and not the other fails here."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from entropy_diode import (
    AsyncEntropyClient,
    Construction,
    Draw,
    EntropyClient,
    HeldUsage,
    InvalidArgumentError,
    QualityReport,
    RateUsage,
    SourceKind,
    Status,
    Usage,
)
from entropy_diode._calls import Calls
from entropy_diode._gen.entropy.v1 import entropy_pb2 as pb
from fakes import FakeEntropy, FakeServer

# The context-manager protocol is the one thing named differently, by necessity.
SYNC_ONLY = {"__enter__", "__exit__"}
ASYNC_ONLY = {"__aenter__", "__aexit__"}


def public(cls: type) -> dict[str, Any]:
    names = {n for n in dir(cls) if not n.startswith("_")} | (SYNC_ONLY | ASYNC_ONLY) & set(
        vars(cls)
    )
    return {n: inspect.getattr_static(cls, n) for n in names}


def unwrap(member: Any) -> Callable[..., Any]:
    return member.__func__ if isinstance(member, (classmethod, staticmethod)) else member


def test_both_clients_have_the_same_public_members() -> None:
    sync, aio = public(EntropyClient), public(AsyncEntropyClient)
    assert set(sync) - SYNC_ONLY == set(aio) - ASYNC_ONLY
    assert SYNC_ONLY <= set(sync) and ASYNC_ONLY <= set(aio)


def shape(sig: inspect.Signature) -> list[tuple[str, Any, Any, Any]]:
    # Annotations are strings here (postponed evaluation), compared as written.
    return [(p.name, p.kind, p.default, p.annotation) for p in sig.parameters.values()]


@pytest.mark.parametrize("name", sorted(set(public(EntropyClient)) - SYNC_ONLY))
def test_each_method_has_the_same_signature_and_docs(name: str) -> None:
    sync = unwrap(inspect.getattr_static(EntropyClient, name))
    aio = unwrap(inspect.getattr_static(AsyncEntropyClient, name))
    if isinstance(sync, property):
        assert isinstance(aio, property) and sync.fget is aio.fget
        return
    s, a = inspect.signature(sync), inspect.signature(aio)
    assert shape(s) == shape(a)
    # The readers are the one type that differs: StreamReader and AsyncStreamReader.
    expected = s.return_annotation
    if name == "reader":
        expected = expected.replace("StreamReader", "AsyncStreamReader")
    assert a.return_annotation == expected
    # Calls return results in one and awaitables in the other; a reader is made in both.
    assert inspect.iscoroutinefunction(aio) == (name not in {"reader", "from_env"})
    assert not inspect.iscoroutinefunction(sync)
    if name != "reader":  # each reader's docstring points to its own class
        assert inspect.getdoc(sync) == inspect.getdoc(aio), f"{name}: docstrings differ"


def test_every_mapped_call_is_a_method_of_both() -> None:
    calls = {n for n, v in vars(Calls).items() if not n.startswith("_") and callable(v)}
    calls.discard("want")  # the accept_kinds and construction rule of calls and readers
    assert calls <= set(public(EntropyClient)) & set(public(AsyncEntropyClient))


# (method, args, kwargs): every unary call, with the client's default filter and construction
# and a call's own.
CASES: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("get_bytes", (16,), {}),
    ("draw", (8,), {"accept_kinds": [], "construction": Construction.RAW}),
    ("get_integers", (-(2**63), 6), {"count": 3}),
    ("get_floats", (2,), {"accept_kinds": [SourceKind.OS, SourceKind.QUANTUM]}),
    ("get_uuids", (2,), {"construction": Construction.DRBG_PREDICTION_RESISTANT}),
    ("status", (), {}),
    ("check_quality", (2500,), {"timeout": 5.0}),
    ("usage", (), {}),
]


def comparable(value: Any) -> Any:
    # Random bytes differ by nature; their length does not.
    if isinstance(value, Draw):
        return (len(value.data), value.provenance)
    return len(value) if isinstance(value, bytes) else value


async def test_both_clients_send_and_map_every_call_the_same_way() -> None:
    fake = FakeEntropy()
    fake.status = pb.GetStatusResponse(pool_bytes=5, serving=True, not_serving_reason="")
    fake.usage = pb.GetUsageResponse(
        key_name="k",
        requests=pb.RateUsage(per_second=3, burst=3, remaining=2, next_refill_ms=334),
        bytes=pb.RateUsage(unlimited=True),
        drbg_bytes=pb.RateUsage(unlimited=True),
        streams=pb.HeldUsage(limit=2, in_use=1, remaining=1),
        undelivered_bytes=pb.HeldUsage(limit=1 << 25, remaining=1 << 25),
    )
    kinds = [SourceKind.QUANTUM]
    drbg = Construction.DRBG
    with FakeServer(fake) as target:
        with EntropyClient(target, "k", accept_kinds=kinds, construction=drbg) as client:
            sync = [comparable(getattr(client, m)(*a, **kw)) for m, a, kw in CASES]
        sync_calls = list(zip(fake.kinds, fake.constructions))
        fake.kinds.clear()
        fake.constructions.clear()
        async with AsyncEntropyClient(target, "k", accept_kinds=kinds, construction=drbg) as ac:
            aio = [comparable(await getattr(ac, m)(*a, **kw)) for m, a, kw in CASES]
        aio_calls = list(zip(fake.kinds, fake.constructions))
    types = [int, tuple, list, list, list, Status, QualityReport, Usage]
    assert [type(v) for v in sync] == types
    assert sync == aio
    assert sync_calls == aio_calls
    assert [k for (_, k), _ in sync_calls] == [[1], [], [1], [3, 1], [1], [], [1], []]
    # GetStatus and GetUsage have no construction: 0, as for a request without the field.
    assert [c for _, (_, c) in sync_calls] == [2, 1, 2, 2, 3, 0, 2, 0]
    usage = sync[-1]
    assert usage.requests == RateUsage(3, 3, 2, 334, 0)
    assert (usage.bytes, usage.drbg_bytes) == (None, None), "unlimited: None"
    assert usage.streams == HeldUsage(limit=2, in_use=1, remaining=1)


async def test_both_clients_refuse_the_same_arguments_the_same_way() -> None:
    fake = FakeEntropy()
    with FakeServer(fake) as target:
        with EntropyClient(target, "k") as client:
            with pytest.raises(InvalidArgumentError) as sync_err:
                client.get_integers(1, 2, count=-1)
        async with AsyncEntropyClient(target, "k") as aclient:
            with pytest.raises(InvalidArgumentError) as aio_err:
                await aclient.get_integers(1, 2, count=-1)
    assert str(sync_err.value) == str(aio_err.value)
    assert fake.kinds == []  # refused before anything was sent
