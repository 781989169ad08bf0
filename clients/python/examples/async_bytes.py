"""The asyncio client: three calls at once, and an async stream."""

import asyncio

from entropy_diode import AsyncEntropyClient


async def main() -> None:
    async with AsyncEntropyClient.from_env() as client:
        key, coin, floats = await asyncio.gather(
            client.get_bytes(32), client.get_integers(0, 1), client.get_floats(3))
        print(key.hex(), "heads" if coin[0] else "tails", floats)
        async with client.reader(1 << 20) as reader:
            print("streamed", sum([len(chunk) async for chunk in reader]), "bytes")


asyncio.run(main())
