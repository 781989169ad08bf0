"""Five random (version 4) UUIDs."""

import os

from entropy_diode import EntropyClient

with EntropyClient(os.environ.get("ENTROPY_ENDPOINT", "127.0.0.1:50051"),
                   os.environ["ENTROPY_API_KEY"], tls=False) as client:
    for u in client.get_uuids(5):
        print(u)
