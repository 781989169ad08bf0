"""Receipts end to end against a real dev gateway started with `--receipts-dir`: draws with
`receipt=True` verify under the key from GetPublicKey and from `<dir>/public.key`, their values
open the commitments, a signed head soon covers them and proves their inclusion, later heads
are consistent with earlier ones, and the audit listing of the whole log finds the draws under
the dev key's name ("dev"). The README's receipts blocks run against it as written. A gateway
without a receipt log refuses `receipt=True`."""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import POOL_CAPACITY, Gateway, free_port, spawn_gateway, stop_gateway, wait_serving
from entropy_diode import AsyncEntropyClient, EntropyClient, FailedPreconditionError
from entropy_diode import receipts as R
from test_receipts_readme import readme_blocks, run_block

DEV_KEY_NAME = "dev"  # server/src/process/dev.rs DEV_KEY_NAME
HEAD_INTERVAL_MS = 200


@pytest.fixture(scope="module")
def receipts_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Gateway, Path]]:
    if os.environ.get("ENTROPY_TEST_ENDPOINT"):
        pytest.skip("needs a gateway this suite starts with --receipts-dir (not an external one)")
    directory = tmp_path_factory.mktemp("receipts")
    gw = Gateway(f"127.0.0.1:{free_port()}", "py-test-" + secrets.token_hex(8), POOL_CAPACITY)
    proc = spawn_gateway(
        gw.target,
        gw.api_key,
        "--receipts-dir",
        str(directory),
        "--receipts-head-interval-ms",
        str(HEAD_INTERVAL_MS),
    )
    try:
        wait_serving(gw.target, gw.api_key)
        yield gw, directory
    finally:
        stop_gateway(proc)


def head_covering(client: EntropyClient, size: int, timeout: float = 10.0) -> R.SignedTreeHead:
    """The first signed head of at least `size` receipts (heads come every interval)."""
    deadline = time.monotonic() + timeout
    while True:
        head = client.signed_tree_head()
        if head.head.size >= size:
            return head
        if time.monotonic() > deadline:
            raise AssertionError(f"no signed head covers {size} receipts after {timeout} s")
        time.sleep(HEAD_INTERVAL_MS / 1000 / 2)


def test_a_receipted_draw_verifies_is_logged_and_is_found_by_the_audit(
    receipts_gateway: tuple[Gateway, Path],
) -> None:
    gw, directory = receipts_gateway
    with EntropyClient(gw.target, gw.api_key) as client:
        info = client.public_key()
        published = R.load_public_key(directory / "public.key")
        assert info.public_key == published and info.key_id == R.key_id(published)
        first_head = client.signed_tree_head()

        result = client.get_integers(1, 49, 6, receipt=True)
        assert len(result.values) == 6 and all(1 <= v <= 49 for v in result.values)
        for key in (info.public_key, published):
            sr = R.verify_receipted(result, key)
        r = sr.receipt
        assert r.serial == result.receipt.serial and r.gateway_id == info.gateway_id
        assert r.key_name_digest == R.key_name_digest(DEV_KEY_NAME)
        assert r.request == R.ReceiptRequest(R.GetIntegersParams(1, 49, 6))
        assert r.provenance == result.provenance  # what the call said, signed
        with pytest.raises(R.ReceiptError, match="do not open"):
            R.open_commitment(r, bytes(32), result.values)

        head = head_covering(client, r.serial + 1)
        R.verify_inclusion(
            result.receipt.signed_receipt,
            client.inclusion_proof(r.serial, head.head.size),
            head,
            published,
        )
        R.verify_consistency(
            first_head,
            head,
            client.consistency_proof(first_head.head.size, head.head.size),
            published,
        )
        # The head the gateway publishes in its directory is a head it signed.
        assert R.verify_tree_head((directory / "head.sth").read_bytes(), published)

        listing = client.list_all_receipts(head.head.size)
        audit = R.audit(listing, head, published, key_name=DEV_KEY_NAME)
        assert audit.checked == head.head.size
        assert result.receipt.signed_receipt in [s.raw for s in audit.receipts]
        assert R.audit(listing, head, published, key_name="not-dev").receipts == ()


async def test_every_kind_of_draw_verifies_from_the_async_client_and_no_value_is_logged(
    receipts_gateway: tuple[Gateway, Path],
) -> None:
    gw, directory = receipts_gateway
    key = R.load_public_key(directory / "public.key")
    async with AsyncEntropyClient(gw.target, gw.api_key) as client:
        data = await client.get_bytes(64, receipt=True)
        floats = await client.get_floats(4, receipt=True)
        uuids = await client.get_uuids(2, receipt=True)
        draw = await client.draw(32, receipt=True)
    for result in (data, floats, uuids, draw):
        R.verify_receipted(result, key)
        R.DrawFile.parse(R.DrawFile.of(result).to_json()).verify(key)
    log = (directory / "receipts.log").read_bytes()
    for served in (data.values, draw.data):
        assert not any(served[i : i + 16] in log for i in range(0, len(served), 16))


def test_the_readme_blocks_run_against_the_gateway(
    receipts_gateway: tuple[Gateway, Path], tmp_path: Path
) -> None:
    gw, directory = receipts_gateway
    draw, verify, audit = readme_blocks()
    shutil.copy(directory / "public.key", tmp_path / "public.key")
    env = dict(os.environ, ENTROPY_ENDPOINT=gw.target, ENTROPY_API_KEY=gw.api_key)
    drawn = run_block(draw, tmp_path, env)
    assert drawn.returncode == 0, drawn.stderr
    verified = run_block(verify, tmp_path, env)
    assert verified.returncode == 0, verified.stderr
    serial = R.DrawFile.load(tmp_path / "draw.json").receipt.serial
    assert verified.stdout.startswith(f"receipt {serial} opens to [")
    with EntropyClient(gw.target, gw.api_key) as client:
        head_covering(client, serial + 1)
    audited = run_block(audit, tmp_path, env)
    assert audited.returncode == 0, audited.stderr
    assert " draws by that key, of " in audited.stdout


def test_a_gateway_without_a_receipt_log_refuses_receipt_true(gateway: Gateway) -> None:
    with EntropyClient(gateway.target, gateway.api_key) as client:
        with pytest.raises(FailedPreconditionError, match="receipts_dir"):
            client.get_integers(1, 6, receipt=True)
        with pytest.raises(FailedPreconditionError, match="receipts_dir"):
            client.public_key()
        assert client.draw(8).receipt is None  # not asked, no log: no receipt
