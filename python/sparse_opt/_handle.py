"""Python objects that own a handle of a SparseOpt C library."""


class Handle:
    """Owns `self._handle` (a C handle, None once released): close() frees
    it through `_release`, once; so does leaving a `with` block or garbage
    collection (errors there are ignored)."""

    _handle = None

    def _release(self, handle):
        raise NotImplementedError

    def close(self):
        if self._handle:
            handle, self._handle = self._handle, None
            self._release(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
