"""The canonical binary encoding's primitives (docs/receipts.md, "Encoding"): fixed-width
big-endian integers, one-byte bools, length-prefixed tags, strings and lists, fixed-size byte
strings. `Reader` refuses every byte string `Writer` cannot produce, naming the field: reading
past the end, a bool that is not 0 or 1, a length out of its bounds, invalid UTF-8, a wrong tag,
and (`Reader.finish`) anything left over."""

from __future__ import annotations

import struct

from ..errors import ReceiptError

U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


class Reader:
    """Reads `data` front to back; `what` names the structure in error messages."""

    def __init__(self, data: bytes, what: str) -> None:
        self._data = bytes(data)
        self._pos = 0
        self.what = what

    def fail(self, field: str, problem: str) -> ReceiptError:
        return ReceiptError(f"{self.what}: {field}: {problem} (at byte {self._pos})")

    def take(self, n: int, field: str) -> bytes:
        if len(self._data) - self._pos < n:
            raise self.fail(
                field, f"needs {n} bytes, {len(self._data) - self._pos} left (truncated)"
            )
        out = self._data[self._pos : self._pos + n]
        self._pos += n
        return out

    def u8(self, field: str) -> int:
        return self.take(1, field)[0]

    def u32(self, field: str) -> int:
        value: int = struct.unpack(">I", self.take(4, field))[0]
        return value

    def u64(self, field: str) -> int:
        value: int = struct.unpack(">Q", self.take(8, field))[0]
        return value

    def i64(self, field: str) -> int:
        value: int = struct.unpack(">q", self.take(8, field))[0]
        return value

    def flag(self, field: str) -> bool:
        b = self.u8(field)
        if b > 1:
            raise self.fail(field, f"a bool is 0x00 or 0x01, not {b:#04x}")
        return b == 1

    def tag(self, expected: str) -> None:
        want = expected.encode("ascii")
        got = self.take(1 + len(want), "tag")
        if got != bytes([len(want)]) + want:
            raise self.fail("tag", f"not {expected!r} (this is not a {self.what})")

    def text(self, field: str, min_len: int, max_len: int) -> str:
        n = self.u32(f"{field} length")
        if not min_len <= n <= max_len:
            raise self.fail(field, f"{n} bytes, outside {min_len}..={max_len}")
        raw = self.take(n, field)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.fail(field, f"not UTF-8 ({e.reason})") from None

    def count(self, field: str, min_len: int, max_len: int) -> int:
        """A list's u32 element count, within its bounds."""
        n = self.u32(f"{field} count")
        if not min_len <= n <= max_len:
            raise self.fail(field, f"{n} elements, outside {min_len}..={max_len}")
        return n

    def finish(self) -> None:
        left = len(self._data) - self._pos
        if left:
            raise self.fail("end", f"{left} bytes after the last field")


class Writer:
    """The encoder the Reader mirrors. Values out of range raise ReceiptError naming the field
    (the encoder is also how a verifier re-encodes what it decoded, so nothing is assumed)."""

    def __init__(self, what: str) -> None:
        self._out = bytearray()
        self.what = what

    def _range(self, field: str, value: int, lo: int, hi: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            raise ReceiptError(f"{self.what}: {field}: {value!r} outside {lo}..={hi}")

    def u8(self, value: int, field: str) -> None:
        self._range(field, value, 0, 255)
        self._out.append(value)

    def u32(self, value: int, field: str) -> None:
        self._range(field, value, 0, U32_MAX)
        self._out += struct.pack(">I", value)

    def u64(self, value: int, field: str) -> None:
        self._range(field, value, 0, U64_MAX)
        self._out += struct.pack(">Q", value)

    def i64(self, value: int, field: str) -> None:
        self._range(field, value, I64_MIN, I64_MAX)
        self._out += struct.pack(">q", value)

    def flag(self, value: bool, field: str) -> None:
        if not isinstance(value, bool):
            raise ReceiptError(f"{self.what}: {field}: {value!r} is not a bool")
        self._out.append(1 if value else 0)

    def tag(self, tag: str) -> None:
        raw = tag.encode("ascii")
        self._out.append(len(raw))
        self._out += raw

    def text(self, value: str, field: str, min_len: int, max_len: int) -> None:
        raw = value.encode("utf-8")
        if not min_len <= len(raw) <= max_len:
            raise ReceiptError(
                f"{self.what}: {field}: {len(raw)} bytes, outside {min_len}..={max_len}"
            )
        self.u32(len(raw), f"{field} length")
        self._out += raw

    def fixed(self, value: bytes, n: int, field: str) -> None:
        if not isinstance(value, (bytes, bytearray)) or len(value) != n:
            raise ReceiptError(f"{self.what}: {field}: must be exactly {n} bytes")
        self._out += value

    def count(self, n: int, field: str, min_len: int, max_len: int) -> None:
        if not min_len <= n <= max_len:
            raise ReceiptError(f"{self.what}: {field}: {n} elements, outside {min_len}..={max_len}")
        self.u32(n, f"{field} count")

    def output(self) -> bytes:
        return bytes(self._out)
