"""The Python client's conformance program (see ../conformance/README.md): runs every case
against the gateway at --endpoint (key in ENTROPY_API_KEY) and prints one JSON line per case.
It reports what it observed; the driver judges it, the same way for every language."""

from __future__ import annotations

import argparse
import base64
import json
import os
from collections.abc import Callable
from typing import Any

from entropy_diode import EntropyClient, EntropyError

Observation = dict[str, Any]
MIB = 1 << 20


def run_case(name: str, case: Callable[[], Observation]) -> None:
    try:
        out: Observation = {"code": "OK", **case()}
    except EntropyError as e:
        out = {"code": e.code.name, "error": f"{type(e).__name__}: {e.details}"}
    except Exception as e:  # anything else is the client's own failure: report, don't crash
        out = {"code": "CLIENT_ERROR", "error": f"{type(e).__name__}: {e}"}
    print(json.dumps({"case": name, **out}), flush=True)


def main() -> None:
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
