"""Stream 8 MiB of random bytes into a file (path from argv, default random.bin). The reader
reconnects after a dropped connection without losing or repeating bytes."""

import os
import shutil
import sys

from entropy_diode import EntropyClient

path = sys.argv[1] if len(sys.argv) > 1 else "random.bin"
with EntropyClient.from_env() as client:
    with client.reader(8 << 20, chunk_bytes=64 << 10) as reader, open(path, "wb") as out:
        shutil.copyfileobj(reader, out, 1 << 20)
print(f"wrote {os.path.getsize(path)} bytes to {path}")
