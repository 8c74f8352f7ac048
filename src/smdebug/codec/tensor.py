"""ndarray <-> TensorProto, with the one dtype table of the package."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from smdebug.codec.wire import I32, I64, LEN, VARINT, Span, iter_fields, key, ld, packed_varints, varint
from smdebug.exceptions import EventFileCorrupt, SMDebugTypeError

__all__ = ["DT", "encode_tensor", "decode_tensor", "to_numpy", "dtype_code"]


class DT:
    """TensorFlow ``DataType`` codes used in smdebug files."""

    INVALID = 0
    FLOAT = 1
    DOUBLE = 2
    INT32 = 3
    UINT8 = 4
    INT16 = 5
    INT8 = 6
    STRING = 7
    COMPLEX64 = 8
    INT64 = 9
    BOOL = 10
    BFLOAT16 = 14
    UINT16 = 17
    COMPLEX128 = 18
    HALF = 19
    UINT32 = 22
    UINT64 = 23


# The dtype table: numpy dtype name (little-endian) <-> DataType code.
_CODE_BY_NAME = {
    "float16": DT.HALF,
    "float32": DT.FLOAT,
    "float64": DT.DOUBLE,
    "int8": DT.INT8,
    "int16": DT.INT16,
    "int32": DT.INT32,
    "int64": DT.INT64,
    "uint8": DT.UINT8,
    "uint16": DT.UINT16,
    "uint32": DT.UINT32,
    "uint64": DT.UINT64,
    "bool": DT.BOOL,
    "complex64": DT.COMPLEX64,
    "complex128": DT.COMPLEX128,
    "bfloat16": DT.BFLOAT16,
}
_NAME_BY_CODE = {v: k for k, v in _CODE_BY_NAME.items()}
_DTYPE_CACHE: dict[int, np.dtype] = {}
_MAX_FILL = 1 << 28  # a single repeated value is broadcast to at most this many elements


def _bfloat16() -> np.dtype:
    try:
        import ml_dtypes
    except ImportError as exc:  # pragma: no cover - ml_dtypes is a core dependency
        raise SMDebugTypeError("bfloat16 needs the 'ml_dtypes' package") from exc
    return np.dtype(ml_dtypes.bfloat16)


def numpy_dtype(code: int) -> np.dtype:
    dt = _DTYPE_CACHE.get(code)
    if dt is None:
        name = _NAME_BY_CODE.get(code)
        if name is None:
            raise EventFileCorrupt(f"unsupported TensorProto dtype code {code}")
        dt = _bfloat16() if name == "bfloat16" else np.dtype(name).newbyteorder("<")
        _DTYPE_CACHE[code] = dt
    return dt


_CODE_BY_DTYPE: dict[np.dtype, int] = {}


def dtype_code(dtype: np.dtype) -> int:
    """The DataType code of a numeric numpy dtype; DT.STRING for text and objects."""
    code = _CODE_BY_DTYPE.get(dtype)
    if code is not None:
        return code
    if dtype.kind in "USO":
        return DT.STRING
    code = _CODE_BY_NAME.get(dtype.name)
    if code is not None:
        _CODE_BY_DTYPE[dtype] = code
    if code is None:
        raise SMDebugTypeError(
            f"numpy dtype {dtype} cannot be saved: supported are {', '.join(sorted(_CODE_BY_NAME))} and strings"
        )
    return code


def to_numpy(data: object) -> np.ndarray:
    """What smdebug saves for a value: arrays as they are, scalars as shape (1,)."""
    if isinstance(data, np.ndarray):
        return data
    if np.isscalar(data):
        return np.array([data])
    if isinstance(data, (list, tuple)):
        return np.asarray(data)
    raise SMDebugTypeError(f"cannot save a value of type {type(data).__name__} as a tensor")


def _shape_proto(shape: Iterable[int]) -> bytes:
    return b"".join(ld(2, (key(1, VARINT) + varint(int(d))) if d else b"") for d in shape)


def tensor_head(arr: np.ndarray) -> bytes:
    """The TensorProto bytes of a numeric array that come before ``tensor_content``'s bytes (the
    array's ``nbytes``, little-endian, in C order): dtype, shape, the content's key and length.
    Nothing of the content is read or copied."""
    code = dtype_code(arr.dtype)
    return b"".join((key(1, VARINT), varint(code), ld(2, _shape_proto(arr.shape)), key(4, LEN), varint(arr.nbytes)))


def tensor_content(arr: np.ndarray) -> np.ndarray:
    """``tensor_content``'s bytes: C order, little-endian. A C-contiguous little-endian array's
    own memory (a flat uint8 view, no copy); otherwise one copy, in that order."""
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"), order="C")
    elif not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return arr.reshape(-1).view(np.uint8)


def encode_tensor(arr: np.ndarray) -> bytes:
    """TensorProto bytes: dtype, shape and C-order little-endian ``tensor_content``.

    Strings are written as smdebug 1.0.34 writes them: dtype left 0, one ``string_val`` per
    element of a flattened array.
    """
    code = dtype_code(arr.dtype)
    if code == DT.STRING:
        flat = arr.reshape(-1)
        parts = [ld(2, _shape_proto(flat.shape))]
        for s in flat.tolist():
            b = s if isinstance(s, bytes) else str(s).encode("utf-8")
            parts.append(ld(8, b))
        return b"".join(parts)
    return tensor_head(arr) + tensor_content(arr).tobytes()


_VAL_FIELDS = {
    5: "float_val",
    6: "double_val",
    7: "int_val",
    10: "int64_val",
    11: "bool_val",
    13: "half_val",
    16: "uint32_val",
    17: "uint64_val",
}
_FIXED = {5: ("<f4", 4), 6: ("<f8", 8)}


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= (1 << 63) else v


def _reshape(a: np.ndarray, shape: list[int]) -> np.ndarray:
    try:
        return a.reshape(shape)
    except ValueError as exc:
        raise EventFileCorrupt(f"cannot shape {a.size} values as {shape}: {exc}") from None


def decode_tensor(buf: bytes, span: Span) -> np.ndarray:
    """A TensorProto inside ``buf[span]`` to an ndarray."""
    dtype = 0
    shape: list[int] = []
    content: bytes | None = None
    strings: list[bytes] = []
    vals: dict[int, list] = {}
    for f, wt, v in iter_fields(buf, span[0], span[1]):
        if f == 1 and wt == VARINT:
            dtype = v
        elif f == 2 and wt == LEN:
            for f2, wt2, v2 in iter_fields(buf, v[0], v[1]):
                if f2 == 2 and wt2 == LEN:
                    size = 0
                    for f3, wt3, v3 in iter_fields(buf, v2[0], v2[1]):
                        if f3 == 1 and wt3 == VARINT:
                            size = _signed(v3)
                    shape.append(size)
        elif f == 4 and wt == LEN:
            content = buf[v[0] : v[1]]
        elif f == 8 and wt == LEN:
            strings.append(bytes(buf[v[0] : v[1]]))
        elif f in _VAL_FIELDS:
            lst = vals.setdefault(f, [])
            if wt == LEN and f in _FIXED:
                if (v[1] - v[0]) % _FIXED[f][1]:
                    raise EventFileCorrupt(f"packed {_VAL_FIELDS[f]} is not a whole number of values")
                lst.extend(np.frombuffer(buf[v[0] : v[1]], dtype=_FIXED[f][0]).tolist())
            elif wt == LEN:
                lst.extend(_signed(x) for x in packed_varints(buf, v))
            elif wt == VARINT:
                lst.append(_signed(v))
            elif wt in (I32, I64):
                lst.extend(np.frombuffer(v, dtype="<f4" if wt == I32 else "<f8").tolist())
    if any(d < 0 for d in shape):
        raise EventFileCorrupt(f"TensorProto has a negative dimension in shape {shape}")
    count = math.prod(shape)
    if dtype in (DT.INVALID, DT.STRING):
        # smdebug writes strings with dtype 0 (numbers always carry a dtype)
        if content is not None or vals:
            raise EventFileCorrupt(f"TensorProto with dtype {dtype} holds numeric values")
        arr = np.array([s.decode("utf-8", errors="replace") for s in strings], dtype=str)
        if shape and count == arr.size:
            return _reshape(arr, shape)
        if shape and count != arr.size:
            raise EventFileCorrupt(f"TensorProto has {arr.size} strings for shape {shape}")
        return arr
    npdt = numpy_dtype(dtype)
    if content is not None:
        if len(content) != count * npdt.itemsize:
            raise EventFileCorrupt(
                f"tensor_content holds {len(content)} bytes, shape {shape} of {npdt} needs {count * npdt.itemsize}"
            )
        return _reshape(np.frombuffer(content, dtype=npdt), shape).copy()
    # TensorFlow's typed repeated fields (what TF itself writes for small tensors)
    raw = next(iter(vals.values()), [])
    if count > max(len(raw), 1) and len(raw) > 1 or count > _MAX_FILL:
        raise EventFileCorrupt(f"TensorProto has {len(raw)} values for shape {shape}")
    try:
        if dtype in (DT.HALF, DT.BFLOAT16) and 13 in vals:
            a = np.array(vals[13], dtype=np.uint16).view(npdt)
        else:
            a = np.array(raw).astype(npdt) if raw else np.zeros(0, dtype=npdt)
        if a.size == 1 and count != 1:
            a = np.full(count, a[0], dtype=npdt)
        if a.size != count:
            raise EventFileCorrupt(f"TensorProto has {a.size} values for shape {shape}")
        return a.reshape(shape)
    except (ValueError, OverflowError, TypeError) as exc:
        if isinstance(exc, EventFileCorrupt):
            raise
        raise EventFileCorrupt(f"bad TensorProto values: {exc}") from None
