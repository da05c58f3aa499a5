"""fluxon.integrations.lmcache - an LMCache native-plugin L2 client over Fluxon KV.

LMCache's multiprocess server loads an L2 adapter of type ``native_plugin`` by
importing ``module_path``, building ``class_name(**adapter_params)`` and
wrapping it in its ``NativeConnectorL2Adapter``
(lmcache/v1/distributed/l2_adapters/native_plugin_l2_adapter.py and
native_connector_l2_adapter.py). That adapter submits batches from its
controller threads, polls ``event_fd()`` on a demux thread, and routes what
``drain_completions()`` returns by future id. The contract, as LMCache's own
C++ connectors keep it (csrc/storage_backends/connector_base.h and
connector_pybind_utils.h):

- ``event_fd()``: a non-blocking eventfd, readable while completions wait (and
  at most once more, spuriously, after a drain that raced a completion).
- ``submit_batch_get(keys, memoryviews)`` / ``submit_batch_set(keys, memoryviews)``
  / ``submit_batch_exists(keys)`` / ``submit_batch_delete(keys)``: queue the
  batch and return its future id (an int, from 1) at once.
- ``drain_completions()``: consumes the eventfd, then returns every finished
  batch as ``(future_id, ok, error, result_bools)``: for a get, True per key read
  into its buffer at the buffer's full size; for exists, True per key stored;
  for delete, True per key removed (False when absent); for a set, None, with
  ``ok`` False and ``error`` naming the first key not stored. A batch that
  failed as a whole (a lost owner) has ``ok`` False and ``result_bools`` None.
- ``close()``: lets the queued batches finish, joins the workers, closes the
  eventfd and the client it opened. Idempotent.

The batches run on ``num_workers`` threads (Fluxon's calls release the GIL)
through ``batch_get_into``, ``batch_put_from``, ``batch_exists`` and
``batch_delete``: one copy each way, between LMCache's buffers and the
cluster. LMCache keeps the buffers alive until the batch completes. Keys are
LMCache's key strings behind ``key_prefix``.

adapter_params: ``socket`` (the owner's client socket; default
$FLUXON_SOCKET), ``num_workers`` (default 2), ``key_prefix`` (default
``"lmcache/"``).
"""
import collections
import os
import queue
import threading

import fluxon

__all__ = ["FluxonNativeClient"]

_NOT_FOUND = -1  # FX_ENOTFOUND


class FluxonNativeClient:
    """The native-plugin client LMCache's NativeConnectorL2Adapter drives."""

    def __init__(self, socket=None, num_workers=2, key_prefix="lmcache/", *, client=None):
        if int(num_workers) < 1:
            raise ValueError("num_workers must be at least 1, not %r" % (num_workers,))
        self._own_client = client is None
        self._client = client if client is not None else fluxon.Client(socket)
        self._prefix = str(key_prefix)
        self._efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        # _lock guards _next_id, _closed, _done and the order of puts on _jobs
        # (close() queues the workers' stop marks after every accepted batch).
        self._lock = threading.Lock()
        self._next_id = 1
        self._closed = False
        self._done = collections.deque()
        self._jobs = queue.SimpleQueue()
        self._workers = [threading.Thread(target=self._work, name="fluxon-lmcache-%d" % i,
                                          daemon=True) for i in range(int(num_workers))]
        for w in self._workers:
            w.start()

    # ---- the native-client contract ---------------------------------------------------

    def event_fd(self):
        return self._efd

    def submit_batch_get(self, keys, memoryviews):
        return self._submit(self._get, keys, memoryviews)

    def submit_batch_set(self, keys, memoryviews):
        return self._submit(self._set, keys, memoryviews)

    def submit_batch_exists(self, keys):
        return self._submit(self._exists, keys)

    def submit_batch_delete(self, keys):
        return self._submit(self._delete, keys)

    def drain_completions(self):
        """Every batch finished since the last drain, as
        [(future_id, ok, error, result_bools or None)]. After close() it still
        hands over what finished before, once."""
        with self._lock:
            # The eventfd read and the pop together: a batch finishing meanwhile
            # waits for the lock, so its signal is for the next drain. Under the
            # lock, close() cannot close the fd between the check and the read.
            if self._efd >= 0:
                try:
                    os.eventfd_read(self._efd)
                except BlockingIOError:
                    pass
            done = list(self._done)
            self._done.clear()
        return done

    def close(self):
        """Lets every accepted batch finish, then stops the workers and closes
        the eventfd; their completions stay for one last drain."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for _ in self._workers:
                self._jobs.put(None)
        for w in self._workers:
            w.join()
        with self._lock:
            self._workers = []
            os.close(self._efd)
            self._efd = -1
        if self._own_client:
            self._client.close()

    # ---- inside -------------------------------------------------------------------------

    def _submit(self, op, keys, bufs=None):
        keys = [self._prefix + k for k in keys]
        if bufs is not None:
            bufs = list(bufs)
            if len(bufs) != len(keys):
                raise ValueError("%d keys and %d memoryviews" % (len(keys), len(bufs)))
        with self._lock:
            if self._closed:
                raise RuntimeError("the Fluxon LMCache client is closed")
            fid = self._next_id
            self._next_id += 1
            self._jobs.put((fid, op, keys, bufs))
        return fid

    def _work(self):
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fid, op, keys, bufs = job
            try:
                # An empty batch completes as its kind does: no bools for a set.
                ok, err, res = op(keys, bufs) if keys else (True, "", None if op == self._set else [])
            except Exception as e:  # the batch as a whole: a lost owner, a bad buffer
                ok, err, res = False, "%s: %s" % (type(e).__name__, e), None
            # Signalled under the lock: once a drain has taken this completion,
            # its signal is in the eventfd, for the next drain to consume.
            with self._lock:
                self._done.append((fid, ok, err, res))
                os.eventfd_write(self._efd, 1)

    def _get(self, keys, bufs):
        got = self._client.batch_get_into(keys, bufs)
        return True, "", [n == memoryview(b).nbytes for n, b in zip(got, bufs)]

    def _set(self, keys, bufs):
        codes = self._client.batch_put_from(keys, bufs)
        failed = [(k, rc) for k, rc in zip(keys, codes) if rc]
        if not failed:
            return True, "", None
        return False, "%d of %d keys not stored; %r: FX_E code %d" % (
            len(failed), len(keys), failed[0][0], failed[0][1]), None

    def _exists(self, keys, bufs):
        return True, "", self._client.batch_exists(keys)

    def _delete(self, keys, bufs):
        codes = self._client.batch_delete(keys)
        failed = [(k, rc) for k, rc in zip(keys, codes) if rc not in (0, _NOT_FOUND)]
        err = "" if not failed else "%r: FX_E code %d" % failed[0]
        return not failed, err, [rc == 0 for rc in codes]
