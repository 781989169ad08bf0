"""The Python client's conformance program (see ../conformance/README.md), key in
ENTROPY_API_KEY:

    conformance.py --endpoint E --stall-endpoint S
        every case against the gateway at E, one JSON line per case; it reports what it
        observed and the driver judges it, the same way for every language
    conformance.py reader --endpoint E --total N --chunk-bytes C --out FILE
                          [--pace-ms P] [--budget-ms B]
        N bytes through the library's stream reader in reads of C, each appended to FILE as
        it arrives: {"code", "bytes", "reconnects", "error"} (for conformance/restart.py)
    conformance.py throughput --endpoint E --total N --chunk-bytes C --mode reader|stub
        N bytes as fast as possible through the reader or the raw stub: {"bytes", "seconds"}
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import grpc

from entropy_diode import EntropyClient, EntropyError, StreamOptions, parse_endpoint
from entropy_diode._gen.entropy.v1 import entropy_pb2 as pb
from entropy_diode._gen.entropy.v1.entropy_pb2_grpc import EntropyServiceStub

Observation = dict[str, Any]
MIB = 1 << 20


def run_case(name: str, case: Callable[[], Observation]) -> None:
    try:
        out: Observation = {"code": "OK", **case()}
    except Exception as e:  # anything but the library's errors is its own failure: report
        out = failure(e)
    print(json.dumps({"case": name, **out}), flush=True)


def failure(e: BaseException) -> Observation:
    if isinstance(e, EntropyError):
        return {"code": e.code.name, "error": f"{type(e).__name__}: {e.details}"}
    return {"code": "CLIENT_ERROR", "error": f"{type(e).__name__}: {e}"}


def reader_mode(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="conformance.py reader")
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--total", type=int, required=True)
    parser.add_argument("--chunk-bytes", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--pace-ms", type=float, default=0.0)
    parser.add_argument("--budget-ms", type=float, default=None)
    args = parser.parse_args(argv)
    options = StreamOptions()
    if args.budget_ms is not None:
        options = StreamOptions(reconnect_budget=args.budget_ms / 1000)
    written, reconnects = 0, 0
    out: Observation = {"code": "OK"}
    try:
        with (
            EntropyClient.from_env(args.endpoint, stream_options=options) as client,
            client.reader(args.total, chunk_bytes=args.chunk_bytes) as reader,
            open(args.out, "ab") as f,
        ):
            try:
                while written < args.total:
                    data = reader.read(min(args.chunk_bytes, args.total - written))
                    if not data:
                        break
                    f.write(data)
                    f.flush()
                    written += len(data)
                    if args.pace_ms > 0:
                        time.sleep(args.pace_ms / 1000)
            finally:
                reconnects = reader.reconnects
    except Exception as e:
        out = failure(e)
    print(json.dumps({**out, "bytes": written, "reconnects": reconnects,
                      "error": out.get("error", "")}), flush=True)


def throughput_mode(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="conformance.py throughput")
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--total", type=int, required=True)
    parser.add_argument("--chunk-bytes", type=int, required=True)
    parser.add_argument("--mode", choices=["reader", "stub"], required=True)
    args = parser.parse_args(argv)
    received = 0
    out: Observation = {}
    start = time.monotonic()
    try:
        if args.mode == "reader":
            with (
                EntropyClient.from_env(args.endpoint) as client,
                client.reader(args.total, chunk_bytes=args.chunk_bytes) as reader,
            ):
                while received < args.total and (data := reader.read(args.chunk_bytes)):
                    received += len(data)
        else:
            # The generated stub on a channel with default options: the baseline the
            # library's reader is compared with.
            endpoint = parse_endpoint(args.endpoint)
            channel = (
                grpc.secure_channel(endpoint.target, grpc.ssl_channel_credentials())
                if endpoint.tls
                else grpc.insecure_channel(endpoint.target)
            )
            with channel:
                stub = EntropyServiceStub(channel)  # type: ignore[no-untyped-call]
                req = pb.StreamRandomRequest(chunk_bytes=args.chunk_bytes, total_bytes=args.total)
                metadata = (("authorization", f"Bearer {os.environ['ENTROPY_API_KEY']}"),)
                for msg in stub.StreamRandom(req, metadata=metadata):
                    received += len(msg.data)
    except grpc.RpcError as e:
        out = {"code": e.code().name, "error": str(e.details())}
    except Exception as e:
        out = failure(e)
    seconds = time.monotonic() - start
    print(json.dumps({"bytes": received, "seconds": round(seconds, 6), **out}), flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "reader":
        return reader_mode(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "throughput":
        return throughput_mode(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--stall-endpoint", required=True, help="a server that never answers")
    args = parser.parse_args()
    key = os.environ["ENTROPY_API_KEY"]

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    with (
        EntropyClient(args.endpoint, key) as c,
        EntropyClient(args.endpoint, "wrong-" + key) as wrong,
        EntropyClient(args.stall_endpoint, key) as stalled,
    ):

        def stream() -> Observation:
            with c.reader(MIB, chunk_bytes=64 * 1024) as reader:
                return {"data_b64": b64(reader.read())}

        cases: list[tuple[str, Callable[[], Observation]]] = [
            ("get_random_32", lambda: {"data_b64": b64(c.get_bytes(32))}),
            ("num_bytes_zero", lambda: {"data_b64": b64(c.get_bytes(0))}),
            ("num_bytes_too_big", lambda: {"data_b64": b64(c.get_bytes(MIB + 1))}),
            ("integers_min_above_max", lambda: {"values": c.get_integers(5, 1)}),
            ("dice", lambda: {"values": c.get_integers(1, 6, count=1000)}),
            ("int64_full_range", lambda: {
                "values": [str(v) for v in c.get_integers(-(2**63), 2**63 - 1, count=100)]
            }),
            ("floats", lambda: {"values": c.get_floats(1000)}),
            ("uuids", lambda: {"values": [str(u) for u in c.get_uuids(100)]}),
            ("stream_1mib", stream),
            ("wrong_key", lambda: {"data_b64": b64(wrong.get_bytes(32))}),
            ("status", lambda: {"pool_capacity_bytes": str(c.status().pool_capacity_bytes)}),
            ("deadline", lambda: {"data_b64": b64(stalled.get_bytes(32, timeout=0.3))}),
        ]
        for name, case in cases:
            run_case(name, case)


if __name__ == "__main__":
    main()
