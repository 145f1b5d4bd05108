#!/usr/bin/env python3
"""Looks keys up and scans a range in a bbtree index from Python, through the
C interface (libbbtree_c.so) with ctypes, the standard library only.

    python3 lookup.py LIBBBTREE_C INDEX KEY...

The index maps byte-string keys to u64 values, as examples/sample does.
"""
import ctypes
import sys


class Bytes(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]


OK, NOT_FOUND, END = 0, 1, 2


def load(library_path):
    lib = ctypes.CDLL(library_path)
    lib.bbtree_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
    lib.bbtree_close.argtypes = [ctypes.c_void_p]
    lib.bbtree_last_error.restype = ctypes.c_char_p
    lib.bbtree_size.argtypes = [ctypes.c_void_p]
    lib.bbtree_size.restype = ctypes.c_uint64
    lib.bbtree_get.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(Bytes)]
    lib.bbtree_u64_value.argtypes = [ctypes.c_void_p]
    lib.bbtree_u64_value.restype = ctypes.c_uint64
    lib.bbtree_cursor_open.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.bbtree_cursor_close.argtypes = [ctypes.c_void_p]
    lib.bbtree_cursor_seek.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.bbtree_cursor_next.argtypes = [ctypes.c_void_p]
    lib.bbtree_cursor_valid.argtypes = [ctypes.c_void_p]
    lib.bbtree_cursor_key.argtypes = [ctypes.c_void_p, ctypes.POINTER(Bytes)]
    lib.bbtree_cursor_value.argtypes = [ctypes.c_void_p, ctypes.POINTER(Bytes)]
    return lib


class Index:
    def __init__(self, lib, path):
        self.lib = lib
        self.handle = ctypes.c_void_p()
        if lib.bbtree_open(path.encode(), 0, 0, ctypes.byref(self.handle)) != OK:
            raise OSError(lib.bbtree_last_error().decode())

    def close(self):
        self.lib.bbtree_close(self.handle)

    def __len__(self):
        return self.lib.bbtree_size(self.handle)

    def get(self, key):
        value = Bytes()
        status = self.lib.bbtree_get(self.handle, key, len(key), ctypes.byref(value))
        if status == NOT_FOUND:
            return None
        if status != OK:
            raise OSError(self.lib.bbtree_last_error().decode())
        return self.lib.bbtree_u64_value(value.data)

    def scan(self, start, limit):
        """Yields up to `limit` (key, value) pairs from the first key >= start."""
        cursor = ctypes.c_void_p()
        self.lib.bbtree_cursor_open(self.handle, ctypes.byref(cursor))
        try:
            self.lib.bbtree_cursor_seek(cursor, start, len(start))
            key, value = Bytes(), Bytes()
            while limit > 0 and self.lib.bbtree_cursor_valid(cursor):
                self.lib.bbtree_cursor_key(cursor, ctypes.byref(key))
                self.lib.bbtree_cursor_value(cursor, ctypes.byref(value))
                yield ctypes.string_at(key.data, key.size), self.lib.bbtree_u64_value(value.data)
                self.lib.bbtree_cursor_next(cursor)
                limit -= 1
        finally:
            self.lib.bbtree_cursor_close(cursor)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    index = Index(load(sys.argv[1]), sys.argv[2])
    try:
        print(f"{len(index)} entries")
        missing = 0
        for key in sys.argv[3:]:
            value = index.get(key.encode())
            print(f"{key}\t{value if value is not None else 'not found'}")
            missing += value is None
        for key, value in index.scan(b"ninety", 3):
            print(f"scan\t{key.decode()}\t{value}")
        return 1 if missing else 0
    finally:
        index.close()


if __name__ == "__main__":
    sys.exit(main())
