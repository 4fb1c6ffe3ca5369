"""Files from others, sized before they are read: no small file takes much memory to refuse.

A loader of a file someone else wrote checks what the file declares before reading its data:

- :func:`read_entry`: a zip entry's declared size against the memory limit and against what
  compression can honestly give (:data:`INFLATION`): a 1 MB zip declaring a 1 GiB entry is
  refused from its directory, without inflating anything;
- :func:`size_torch_file`: a ``torch.save`` archive (a zip of a pickle, ``data.pkl``, that
  names its storages with their element counts, and one stored entry per storage): every entry
  stored uncompressed as ``torch.save`` writes them, every storage the size its entry holds, and
  tensors only under the keys the loader reads, all from the zip's directory and a pass over the
  pickle that builds nothing (:class:`DeclaredUnpickler`), so that loading it costs no more
  memory than the file's own size;
- :class:`StateUnpickler`: a numpy state dict (RLlib's ``module_state.pkl``) unpickled with
  nothing but the globals that rebuild numeric arrays, each array sized against the file before
  it is allocated.

Every refusal is a ``ValueError`` naming the file and what it declares.
"""

from __future__ import annotations

import importlib
import io
import pickle
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np

from zhuoji_env.limits import check_memory

INFLATION = 64
"""The most an honest zip entry inflates: its declared size at most this many times its
compressed size (plus :data:`SMALL_ENTRY`); deflate reaches about 1,000 on runs of zeros, which
is what a zip bomb holds, and 2 to 10 on settings and weights."""
SMALL_ENTRY = 1 << 20
"""An entry up to this size (1 MiB) inflated is read whatever its compression ratio."""
MAX_GLOBALS = 64
"""The most distinct globals a ``torch.save`` pickle may name while it is sized (a checkpoint
names a handful: the tensor rebuilders, ``OrderedDict``, the storage types)."""


def read_entry(archive: zipfile.ZipFile, path: Path | str, name: str, what: str) -> bytes:
    """The bytes of entry ``name`` of the zip ``archive`` (the file ``path``, a ``what``),
    after its declared size is checked against the memory limit and :data:`INFLATION`."""
    try:
        info = archive.getinfo(name)
    except KeyError:
        raise ValueError(f"{path}: not {what} (no {name!r} in the zip)") from None
    declared = info.file_size
    if declared > SMALL_ENTRY and declared > INFLATION * info.compress_size:
        raise ValueError(
            f"{path}: its {name!r} declares {declared:,} bytes compressed into "
            f"{info.compress_size:,}, more than {INFLATION} times: a zip bomb, not {what}; "
            "nothing was inflated"
        )
    check_memory(f"{path}: entry {name!r} of {declared:,} bytes", declared)
    try:
        return archive.read(info)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise ValueError(f"{path}: not {what} (its {name!r} is damaged: {exc})") from None


class Refused(pickle.UnpicklingError):
    """What :class:`StateUnpickler` and :class:`DeclaredUnpickler` refuse (the message says)."""


class RefusedGlobal(Refused):
    """A global that :class:`StateUnpickler` does not load (its name is the message)."""


# --------------------------------------------------------------------------- torch.save files


class Declared:
    """A stand-in for whatever a global of a sized pickle would build: it keeps the arguments,
    items and state it is given and runs nothing (:class:`DeclaredUnpickler`)."""

    qualified = "?"

    def __new__(cls, *args, **kwargs):
        made = object.__new__(cls)
        made.args, made.items, made.state = args, {}, None
        return made

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):  # what a stand-in returns may be called in turn
        return type(self)(*args)

    def __setstate__(self, state) -> None:
        self.state = state

    def __setitem__(self, key, value) -> None:
        self.items[key] = value

    def append(self, value) -> None:
        self.items[len(self.items)] = value

    def extend(self, values) -> None:
        for value in values:
            self.append(value)


class Storage:
    """A storage a ``torch.save`` pickle names: its record key, type and element count."""

    def __init__(self, key: str, kind: str, count: int):
        self.key, self.kind, self.count = key, kind, count


class DeclaredUnpickler(pickle.Unpickler):
    """Reads a ``torch.save`` pickle without building anything it names: each global is a
    :class:`Declared` stand-in and each storage a :class:`Storage`, so the storages can be
    sized and traced to the keys that hold them before torch reads any of them."""

    def __init__(self, file):
        super().__init__(file)
        self.globals, self.storages = {}, []

    def find_class(self, module: str, name: str):
        qualified = f"{module}.{name}"
        if qualified not in self.globals:
            if len(self.globals) >= MAX_GLOBALS:
                raise Refused(f"names more than {MAX_GLOBALS} different globals")
            self.globals[qualified] = type(name, (Declared,), {"qualified": qualified})
        return self.globals[qualified]

    def persistent_load(self, pid):
        if (
            not isinstance(pid, tuple)
            or len(pid) not in (5, 6)  # 6 in the legacy format, with a view's place
            or pid[0] != "storage"
            or not isinstance(pid[1], type)
            or not issubclass(pid[1], Declared)
            or not isinstance(pid[2], str)
            or type(pid[4]) is not int
            or pid[4] < 0
        ):
            raise Refused(f"a persistent id that is not a storage: {str(pid)[:80]}")
        storage = Storage(pid[2], pid[1].qualified, pid[4])
        self.storages.append(storage)
        return storage


TORCH_SAVE_GLOBALS = frozenset(
    {
        "collections.OrderedDict",
        "torch._utils._rebuild_tensor_v2",
        "torch._utils._rebuild_parameter",
        "torch.Size",
    }
)
"""The globals ``torch.save`` names in a checkpoint of tensors and plain data, beside the storage
types (``_element_size``)."""


def _legacy_refusal(source: Path | bytes, name: str, what: str) -> ValueError:
    """Why a file in ``torch.save``'s legacy format (before torch 1.6: pickles one after another,
    not a zip) is refused: a global it names that could run code, found by reading its pickles
    with :class:`DeclaredUnpickler` (nothing is built); else the format itself, whose storages
    torch allocates as the pickle names them, before anything can size them."""
    stream = io.BytesIO(source) if isinstance(source, bytes) else open(source, "rb")
    with stream:
        unpickler = DeclaredUnpickler(stream)
        try:
            for _ in range(4):  # the magic number, the protocol, the system's info, the object
                unpickler.load()
        except Exception:  # a damaged stream: what was read so far tells
            pass
    foreign = sorted(
        g for g in unpickler.globals if g not in TORCH_SAVE_GLOBALS and _element_size(g) is None
    )
    if foreign:
        return ValueError(
            f"{name}: refused, it holds objects other than tensors and plain data "
            f"({foreign[0]}), which could run code when loaded; nothing from it was run"
        )
    return ValueError(
        f"{name}: not {what} this package reads: torch.save's legacy format (before torch 1.6), "
        "whose tensors cannot be sized before torch allocates them; save it again with a "
        "current torch.save"
    )


def _element_size(kind: str) -> int | None:
    """Bytes per element of a storage type a ``torch.save`` pickle names (``torch.FloatStorage``),
    None for a name that is no such type."""
    import torch

    module, _, name = kind.rpartition(".")
    if module != "torch" or not name.endswith("Storage"):
        return None
    with warnings.catch_warnings():  # the typed storage classes are deprecated, not gone
        warnings.simplefilter("ignore")
        dtype = getattr(getattr(torch, name, None), "dtype", None)
    return dtype.itemsize if isinstance(dtype, torch.dtype) else None


def _storages_in(value) -> list[Storage]:
    """The storages that ``value`` (what :class:`DeclaredUnpickler` built) holds, each object
    visited once (a pickle may share or nest objects in cycles)."""
    found, seen, todo = [], set(), [value]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Storage):
            found.append(item)
        elif isinstance(item, Declared):
            todo += [*item.args, item.state, *item.items.keys(), *item.items.values()]
        elif isinstance(item, dict):
            todo += [*item.keys(), *item.values()]
        elif isinstance(item, (list, tuple, set, frozenset)):
            todo += list(item)
    return found


def size_torch_file(
    source: Path | bytes, name: str, what: str, tensor_keys: tuple[str, ...] | None = None
) -> None:
    """Refuse (``ValueError`` naming ``name``) a ``torch.save`` archive that would cost more to
    load than its own size, or than the memory limit, before torch reads any of it: an entry
    that is compressed (``torch.save`` stores every entry as it is: compression is how a small
    file declares a large tensor), a storage whose declared element count is not what its entry
    holds, or, with ``tensor_keys``, tensors under another key of the top-level dict (the keys
    the loader reads). ``source`` is the file or its bytes; ``what`` says what it should be."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(source) if isinstance(source, bytes) else source)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        if isinstance(source, bytes):
            head = source[:4]
        else:
            with open(source, "rb") as f:
                head = f.read(4)
        if head[:2] == b"\x80\x02":  # a pickle: torch.save's legacy format
            raise _legacy_refusal(source, name, what) from None
        why = (
            "a truncated or damaged torch.save archive"
            if head == b"PK\x03\x04"
            else "not written by torch.save"
        )
        raise ValueError(f"{name}: not {what}, {why} ({type(exc).__name__})") from None
    with archive:
        entries = archive.infolist()
        size = len(source) if isinstance(source, bytes) else Path(source).stat().st_size
        for info in entries:
            if info.compress_type != zipfile.ZIP_STORED:
                raise ValueError(
                    f"{name}: its entry {info.filename!r} is compressed ({info.file_size:,} bytes "
                    f"in {info.compress_size:,}); torch.save stores every entry uncompressed, so "
                    f"this is not {what}; nothing was inflated"
                )
            if info.header_offset + info.file_size > size:
                raise ValueError(
                    f"{name}: its entry {info.filename!r} declares {info.file_size:,} bytes "
                    f"past the end of the file ({size:,} bytes): truncated or forged, not {what}"
                )
        pickles = [i for i in entries if i.filename.endswith("/data.pkl")]
        if len(pickles) != 1:
            raise ValueError(f"{name}: not {what}, no single data.pkl in the torch.save archive")
        prefix = pickles[0].filename[: -len("data.pkl")]
        sizes = {i.filename: i.file_size for i in entries}
        pickled = read_entry(archive, name, pickles[0].filename, what)
        unpickler = DeclaredUnpickler(io.BytesIO(pickled))
        try:
            top = unpickler.load()
        except Refused as exc:
            raise ValueError(f"{name}: not {what}: its data.pkl {exc}") from None
        except Exception as exc:  # a damaged pickle makes the unpickler raise almost anything
            raise ValueError(
                f"{name}: not {what}, a damaged data.pkl ({type(exc).__name__})"
            ) from None
    for storage in unpickler.storages:
        element = _element_size(storage.kind)
        if element is None:
            raise ValueError(f"{name}: not {what}: a storage of type {storage.kind!r}")
        record = f"{prefix}data/{storage.key}"
        if sizes.get(record) != storage.count * element:
            raise ValueError(
                f"{name}: its storage {storage.key!r} declares {storage.count:,} elements of "
                f"{element} bytes, but its entry holds {sizes.get(record, 0):,} bytes: not {what}"
            )
    if tensor_keys is not None and isinstance(top, dict):  # not a dict: the loader says why
        for key, value in top.items():
            held = _storages_in(value) if key not in tensor_keys else []
            if held:
                total = sum(s.count * _element_size(s.kind) for s in held)
                raise ValueError(
                    f"{name}: its {str(key)[:40]!r} holds tensors ({total:,} bytes); {what} "
                    f"keeps tensors only in {', '.join(map(repr, tensor_keys))}, the rest is "
                    "plain data"
                )
    distinct = {s.key: s for s in unpickler.storages}.values()  # views share their storage
    declared = sum(s.count * _element_size(s.kind) for s in distinct)
    check_memory(f"{name}: tensors of {declared:,} bytes", declared)


# --------------------------------------------------------------------------- numpy states


class SizedArray(np.ndarray):
    """What :class:`StateUnpickler` rebuilds an array as: its state is sized before numpy
    allocates it (``__setstate__``); turned into a plain ``ndarray`` after loading."""

    budget = 0

    def __setstate__(self, state) -> None:
        if not isinstance(state, tuple) or len(state) != 5:
            raise Refused(f"an array state that is not numpy's: {str(state)[:80]}")
        _, shape, dtype, _, data = state
        _check_array(shape, dtype, self.budget)
        if not isinstance(data, (bytes, bytearray)):
            raise Refused("an array whose data is not bytes")
        super().__setstate__(state)


def _check_array(shape, dtype, budget: int) -> None:
    """Refuse an array of a non-numeric type, or one larger than ``budget`` bytes."""
    if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape):
        raise Refused(f"an array of shape {str(shape)[:80]}")
    try:
        dtype = np.dtype(dtype)
    except (TypeError, ValueError):
        raise Refused(f"an array of type {str(dtype)[:40]}") from None
    if dtype.kind not in "biufc" or dtype.hasobject:
        raise Refused(f"an array of type {dtype}, not of numbers")
    nbytes = dtype.itemsize
    for n in shape:
        nbytes *= n
    if nbytes > budget:
        raise Refused(
            f"an array of shape {shape} ({nbytes:,} bytes), more than the whole file holds "
            f"({budget:,} bytes)"
        )


class StateUnpickler(pickle.Unpickler):
    """Unpickles a state of numpy arrays (what Ray writes to ``module_state.pkl``), refusing any
    other global, so a crafted file cannot run code (:class:`RefusedGlobal`), and any array
    larger than the file's ``budget`` bytes before it is allocated (:class:`Refused`); arrays
    come out as plain ``ndarray``\\ s (:func:`plain_arrays`)."""

    ALLOWED = frozenset(
        {
            ("collections", "OrderedDict"),
            ("numpy", "dtype"),
            ("numpy", "ndarray"),
            ("numpy._core.numeric", "_frombuffer"),
            ("numpy.core.numeric", "_frombuffer"),
            ("numpy._core.multiarray", "_reconstruct"),
            ("numpy.core.multiarray", "_reconstruct"),
        }
    )
    """The globals that rebuild an ordered dict of numpy arrays (numpy 1 and 2 names)."""

    def __init__(self, file, budget: int):
        super().__init__(file)
        self.sized = type("SizedArray", (SizedArray,), {"budget": budget})

    def find_class(self, module: str, name: str):
        if (module, name) not in self.ALLOWED:
            raise RefusedGlobal(f"{module}.{name}")
        found = getattr(importlib.import_module(module), name)
        if name == "_reconstruct":
            return self._reconstruct(found)
        if name == "_frombuffer":
            return self._frombuffer(found)
        return found

    def _reconstruct(self, real):
        def reconstruct(subtype, shape, dtype):
            if subtype is not np.ndarray:
                raise Refused(f"an array of class {str(subtype)[:60]}")
            _check_array(shape, dtype, self.sized.budget)
            return real(self.sized, shape, dtype)

        return reconstruct

    def _frombuffer(self, real):
        def frombuffer(buffer, dtype, shape, order):
            _check_array(shape, dtype, self.sized.budget)
            return real(buffer, dtype, shape, order)

        return frombuffer


def plain_arrays(state):
    """``state`` with every :class:`SizedArray` in its dict as a plain ``ndarray`` view."""
    if isinstance(state, dict):
        return type(state)((k, plain_arrays(v)) for k, v in state.items())
    if isinstance(state, SizedArray):
        return state.view(np.ndarray)
    return state
