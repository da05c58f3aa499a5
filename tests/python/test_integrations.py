"""test_integrations.py - fluxon.integrations driven as SGLang and LMCache drive them.

Neither framework is installed here. Each harness below repeats the calls the
framework makes, in the same order, with the same arguments and the same checks
of the results, from the files docs/integrations.md names:

- SGLang HiCache (sglang/srt/mem_cache/storage/backend_factory.py and
  sglang/srt/managers/cache_controller.py): the `dynamic` backend is imported by
  module path and class name, checked with issubclass(HiCacheStorage), built as
  cls(storage_config, kwargs) and given the host pool; prefetch asks batch_exists
  per STORAGE_BATCH_SIZE pages and stops at the first short batch, backup calls
  batch_set_v1 and takes all(...), prefetch reads with batch_get_v1 and counts
  the leading successes. The host pools are numpy stand-ins with the page
  buffer layout of SGLang's MHA (page_first) and MLA host pools.
- LMCache (lmcache/v1/distributed/l2_adapters/native_plugin_l2_adapter.py and
  native_connector_l2_adapter.py): the native_plugin factory builds
  class_name(**adapter_params) and checks the six methods; the adapter submits
  under its lock, polls event_fd() with a 500 ms timeout on a demux thread and
  routes drain_completions() by future id.

Each class starts its own cluster (cluster_util.ClusterTest). By hand:

    PYTHONPATH=build/python /usr/bin/python3 tests/python/test_integrations.py -v
"""
import ctypes
import hashlib
import importlib
import os
import select
import threading
import time
import unittest

import numpy as np

import fluxon
from cluster_util import ClusterTest, run_threads

try:
    import torch
except ImportError:  # host indices are numpy arrays then (both have tolist())
    torch = None

STORAGE_BATCH_SIZE = 128  # sglang/srt/mem_cache/hicache_storage.py


def page_hashes(n, seed):
    """SGLang's page hash chain (mem_cache/utils.get_hash_str): sha256 hex per page."""
    out, prior = [], str(seed).encode()
    for i in range(n):
        prior = hashlib.sha256(prior + i.to_bytes(8, "little")).hexdigest().encode()
        out.append(prior.decode())
    return out


def indices(token_slots):
    return torch.tensor(token_slots, dtype=torch.int64) if torch else np.array(token_slots)


class FakeMHAHostPool:
    """MHATokenToKVPoolHost (sglang/srt/mem_cache/pool_host/mha.py), page_first:
    kv_buffer (2, size, layer_num, head_num, head_dim); per page a K and a V
    buffer of page_size * layer_num * head_num * head_dim elements."""

    layout = "page_first"

    def __init__(self, pages, page_size=4, layer_num=2, head_num=2, head_dim=8,
                 dtype=np.float16, seed=0):
        self.page_size, self.size = page_size, pages * page_size
        self.layer_num, self.head_num, self.head_dim = layer_num, head_num, head_dim
        self.dtype = np.dtype(dtype)
        shape = (2, self.size, layer_num, head_num, head_dim)
        nbytes = int(np.prod(shape)) * self.dtype.itemsize
        raw = np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)
        self.kv_buffer = raw.view(self.dtype).reshape(shape)

    def get_page_buffer_meta(self, indices):  # as mha.py, page_first branch
        assert len(indices) % self.page_size == 0
        ptr_list = []
        base = self.kv_buffer.ctypes.data
        indices = indices.tolist()
        token = self.layer_num * self.head_num * self.head_dim * self.dtype.itemsize
        v_offset = self.size * token
        for index in range(0, len(indices), self.page_size):
            k_ptr = base + indices[index] * token
            ptr_list.append(k_ptr)
            ptr_list.append(k_ptr + v_offset)
        return ptr_list, [self.page_size * token] * len(ptr_list)

    def page_bytes(self, slot):
        """(K bytes, V bytes) of the page at page slot `slot`."""
        s = slice(slot * self.page_size, (slot + 1) * self.page_size)
        return self.kv_buffer[0, s].tobytes(), self.kv_buffer[1, s].tobytes()

    # The flat data pages of the older interface (mha.py get_data_page ...).
    def get_data_page(self, index, flat=True):
        return self.kv_buffer[:, index:index + self.page_size].flatten()

    def get_dummy_flat_data_page(self):
        return np.zeros(2 * self.page_size * self.layer_num * self.head_num * self.head_dim,
                        dtype=self.dtype)

    def set_from_flat_data_page(self, index, data_page):
        self.kv_buffer[:, index:index + self.page_size] = data_page.reshape(
            2, self.page_size, self.layer_num, self.head_num, self.head_dim)


class FakeMLAHostPool(FakeMHAHostPool):
    """An MLA host pool, page_first: one buffer per page (Mooncake's MLA path
    stores one object per page, `<key>_<suffix>_k`)."""

    def get_page_buffer_meta(self, indices):
        ptrs, sizes = super().get_page_buffer_meta(indices)
        return ptrs[::2], sizes[::2]


class HiCacheHarness:
    """The calls SGLang's HiCacheController makes on its storage backend."""

    def __init__(self, pool, extra_config, tp_rank=0, tp_size=1, mla=False):
        # backend_factory.StorageBackendFactory._create_dynamic_backend
        for field in ("backend_name", "module_path", "class_name"):
            assert field in extra_config, field
        module = importlib.import_module(extra_config["module_path"])
        cls = getattr(module, extra_config["class_name"])
        if not issubclass(cls, module.HiCacheStorage):
            raise TypeError("%s must inherit from HiCacheStorage" % cls)
        self.config = module.HiCacheStorageConfig(
            tp_rank=tp_rank, tp_size=tp_size, pp_rank=0, pp_size=1, attn_cp_rank=0,
            attn_cp_size=1, is_mla_model=mla, enable_storage_metrics=False,
            is_page_first_layout=pool.layout == "page_first", model_name="org/model-7b",
            extra_config=dict(extra_config))
        self.extra_info = module.HiCacheStorageExtraInfo
        self.backend = cls(self.config, {})
        # cache_controller.HiCacheController.attach_storage_backend
        self.backend.register_mem_pool_host(pool)
        self.pool = pool
        self.zero_copy = bool(extra_config.get("interface_v1", 0))

    def hit_query(self, hashes):
        """_storage_hit_query: the stored prefix, STORAGE_BATCH_SIZE pages at a time."""
        hit = []
        for start in range(0, len(hashes), STORAGE_BATCH_SIZE):
            batch = hashes[start:start + STORAGE_BATCH_SIZE]
            n = self.backend.batch_exists(batch, self.extra_info(prefix_keys=None))
            hit.extend(batch[:n])
            if n < len(batch):
                break
        return hit

    def batches(self, hashes, host_indices):
        """The controller's batches: STORAGE_BATCH_SIZE pages and their host indices."""
        ps = self.pool.page_size
        for i in range(0, len(hashes), STORAGE_BATCH_SIZE):
            batch = hashes[i:i + STORAGE_BATCH_SIZE]
            yield batch, host_indices[i * ps:(i + len(batch)) * ps]

    def backup(self, hashes, host_indices):
        """_page_backup with _page_set_zero_copy (or _generic_page_set): tokens written."""
        ps, done = self.pool.page_size, 0
        for batch, idx in self.batches(hashes, host_indices):
            if self.zero_copy:
                ok = all(self.backend.batch_set_v1(batch, idx, self.extra_info()))
            else:
                data = [self.pool.get_data_page(int(idx[j * ps])) for j in range(len(batch))]
                ok = self.backend.batch_set(batch, data)
            if not ok:
                break
            done += ps * len(batch)
        return done

    def prefetch(self, hashes, host_indices):
        """_page_transfer with _page_get_zero_copy (or _generic_page_get): pages read."""
        ps, done = self.pool.page_size, 0
        for batch, idx in self.batches(hashes, host_indices):
            if self.zero_copy:
                results = self.backend.batch_get_v1(batch, idx, self.extra_info())
                inc = 0
                for r in results[:len(batch)]:
                    if not r:
                        break
                    inc += 1
            else:
                dummy = [self.pool.get_dummy_flat_data_page() for _ in batch]
                pages = self.backend.batch_get(batch, dummy)
                inc = 0
                for j in range(len(batch)):
                    if pages[j] is None:
                        break
                    self.pool.set_from_flat_data_page(int(idx[j * ps]), pages[j])
                    inc += 1
            done += inc
            if inc != len(batch):
                break
        return done


def slots(pages, page_size, order=None):
    """Host indices (token slots) of the given page slots, page after page."""
    order = range(pages) if order is None else order
    return indices([p * page_size + t for p in order for t in range(page_size)])


class SpyClient(fluxon.Client):
    """Records the keys of every put from addresses."""
    __slots__ = ("puts",)

    def batch_put_from_ptrs(self, keys, ptrs, sizes, **opts):
        self.puts.extend(keys)
        return super().batch_put_from_ptrs(keys, ptrs, sizes, **opts)


class SGLangHiCacheTest(ClusterTest):
    def extra(self, **more):
        cfg = {"backend_name": "fluxon", "module_path": "fluxon.integrations.sglang",
               "class_name": "FluxonHiCacheStorage", "interface_v1": 1,
               "socket": self.socket, "key_prefix": self.key() + "/"}
        cfg.update(more)
        return cfg

    def harness(self, pool, **kw):
        h = HiCacheHarness(pool, self.extra(), **kw)
        self.addCleanup(h.backend.close)
        return h

    def test_prefix_backup_and_prefetch_mha(self):
        pages, ps = 300, 4  # three STORAGE_BATCH_SIZE batches
        src = FakeMHAHostPool(pages, ps, seed=1)
        h = self.harness(src)
        hashes = page_hashes(pages, 1)
        self.assertEqual(h.hit_query(hashes), [])
        # Back up the first 150 pages, then ask for all 300: the stored prefix.
        self.assertEqual(h.backup(hashes[:150], slots(150, ps)), 150 * ps)
        self.assertEqual(h.hit_query(hashes), hashes[:150])
        # Back up all 300 with the first 150 pages scribbled over in the pool:
        # only the missing pages are put, the stored ones keep their bytes.
        kept = [src.page_bytes(p) for p in range(150)]
        src.kv_buffer[:, :150 * ps] = 0
        h.backend.client.close()
        h.backend.client = spy = SpyClient(self.socket)
        spy.puts = []
        self.assertEqual(h.backup(hashes, slots(pages, ps)), pages * ps)
        self.assertEqual(spy.puts, h.backend._objects(hashes[150:]))  # the missing ones only
        self.assertEqual(h.hit_query(hashes), hashes)
        # Prefetch into a fresh pool, pages in reverse slot order.
        dst = FakeMHAHostPool(pages, ps, seed=99)
        reader = self.harness(dst)
        order = list(reversed(range(pages)))
        self.assertEqual(reader.prefetch(hashes, slots(pages, ps, order)), pages)
        for i, slot in enumerate(order):
            want = kept[i] if i < 150 else src.page_bytes(i)
            self.assertEqual(dst.page_bytes(slot), want, "page %d" % i)
        # A page with its V object gone ends the stored prefix there.
        obj = self.key() + "/org-model-7b/" + hashes[170] + "_0-1_v"
        self.assertTrue(self.client.exists(obj))
        self.client.delete(obj)
        self.assertEqual(len(h.hit_query(hashes)), 170)
        self.assertEqual(reader.prefetch(hashes, slots(pages, ps)), 170)
        results = h.backend.batch_get_v1(hashes[168:173], slots(5, ps))
        self.assertEqual(results, [True, True, False, True, True])

    def test_backup_reports_what_it_could_not_store(self):
        pages, ps = 4, 4
        h = self.harness(FakeMHAHostPool(pages, ps, seed=2))
        hashes = page_hashes(pages, 2)
        other = fluxon.Client(self.socket)
        self.addCleanup(other.close)
        # A key someone else stored first counts as stored (reject_if_exists).
        other.put(self.key() + "/org-model-7b/" + hashes[1] + "_0-1_k", b"racing writer")
        self.assertEqual(h.backend.batch_set_v1(hashes, slots(pages, ps)), [True] * 4)
        self.assertEqual(h.backend.batch_exists(hashes), 4)
        # A lost owner: every page False, batch_exists 0, no exception.
        h.backend.client.close()
        self.assertEqual(h.backend.batch_exists(hashes), 0)
        self.assertEqual(h.backend.batch_get_v1(hashes, slots(pages, ps)), [False] * 4)
        self.assertEqual(h.backend.batch_set_v1(hashes, slots(pages, ps)), [False] * 4)

    def test_tp_ranks_and_mla(self):
        pages, ps = 8, 2
        hashes = page_hashes(pages, 3)
        rank0 = self.harness(FakeMHAHostPool(pages, ps, seed=3), tp_rank=0, tp_size=2)
        rank1 = self.harness(FakeMHAHostPool(pages, ps, seed=4), tp_rank=1, tp_size=2)
        self.assertEqual(rank0.backup(hashes, slots(pages, ps)), pages * ps)
        self.assertEqual(rank1.hit_query(hashes), [])  # MHA: each rank has its own heads
        self.assertEqual(rank1.backup(hashes[:3], slots(3, ps)), 3 * ps)
        self.assertEqual(len(rank1.hit_query(hashes)), 3)
        # MLA: one object per page, shared by the TP ranks.
        mla_src = FakeMLAHostPool(pages, ps, seed=5)
        mla0 = self.harness(mla_src, tp_rank=0, tp_size=2, mla=True)
        mla1 = self.harness(FakeMLAHostPool(pages, ps, seed=6), tp_rank=1, tp_size=2, mla=True)
        mla_hashes = page_hashes(pages, 30)
        self.assertEqual(mla0.backup(mla_hashes, slots(pages, ps)), pages * ps)
        self.assertEqual(mla1.hit_query(mla_hashes), mla_hashes)
        self.assertEqual(mla1.prefetch(mla_hashes, slots(pages, ps)), pages)
        self.assertEqual(mla1.pool.page_bytes(5)[0], mla_src.page_bytes(5)[0])

    def test_clear_and_close(self):
        pages, ps = 6, 2
        h = self.harness(FakeMHAHostPool(pages, ps, seed=7))
        hashes = page_hashes(pages, 7)
        h.backup(hashes, slots(pages, ps))
        self.assertEqual(len(h.hit_query(hashes)), pages)
        h.backend.clear()
        self.assertEqual(h.hit_query(hashes), [])
        self.assertFalse(self.client.exists(self.key() + "/org-model-7b/" + hashes[0] + "_0-1_k"))
        self.assertEqual(h.backup(hashes, slots(pages, ps)), pages * ps)  # usable again
        h.backend.close()
        self.assertTrue(h.backend.client.closed)

    def test_generic_interface_without_v1(self):
        pages, ps = 5, 4
        src = FakeMHAHostPool(pages, ps, seed=8)
        h = HiCacheHarness(src, self.extra(interface_v1=0))
        self.addCleanup(h.backend.close)
        hashes = page_hashes(pages, 8)
        self.assertEqual(h.backup(hashes, slots(pages, ps)), pages * ps)
        self.assertEqual(h.hit_query(hashes + page_hashes(2, 80)), hashes)
        dst = FakeMHAHostPool(pages, ps, seed=9)
        h.pool = dst
        self.assertEqual(h.prefetch(hashes, slots(pages, ps)), pages)
        self.assertEqual(dst.kv_buffer.tobytes(), src.kv_buffer.tobytes())  # (NaN bits too)

    def test_unsupported_layouts_are_refused(self):
        pool = FakeMHAHostPool(2)
        pool.layout = "layer_first"
        with self.assertRaises(ValueError):
            HiCacheHarness(pool, self.extra())
        module = importlib.import_module("fluxon.integrations.sglang")
        cfg = HiCacheHarness(FakeMHAHostPool(2), self.extra()).config
        cfg.should_split_heads = True
        with self.assertRaises(ValueError):
            module.FluxonHiCacheStorage(cfg, {})


# ---- LMCache ---------------------------------------------------------------------------

NATIVE_METHODS = ["event_fd", "submit_batch_get", "submit_batch_set", "submit_batch_exists",
                  "drain_completions", "close"]


def load_native_plugin(config):
    """native_plugin_l2_adapter._create_native_plugin_l2_adapter, up to the wrap."""
    module = importlib.import_module(config["module_path"])
    native = getattr(module, config["class_name"])(**config.get("adapter_params", {}))
    for m in NATIVE_METHODS:
        if not callable(getattr(native, m, None)):
            native.close()
            raise TypeError("missing required method %r" % m)
    assert callable(getattr(native, "submit_batch_delete", None))
    return native


class Demux:
    """NativeConnectorL2Adapter's side: submits under one lock, and a demux
    thread polls event_fd() (500 ms) and routes drain_completions() by id."""

    def __init__(self, native):
        self.native = native
        self.fd = int(native.event_fd())
        self.lock = threading.Lock()
        self.pending, self.done, self.unknown = {}, {}, []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def submit(self, op, *args):
        with self.lock:
            fid = int(getattr(self.native, "submit_batch_" + op)(*args))
            self.pending[fid] = (op, threading.Event())
        return fid

    def loop(self):
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while not self.stop.is_set():
            if not poller.poll(500):
                continue
            for fid, ok, err, bools in self.native.drain_completions():
                with self.lock:
                    entry = self.pending.pop(int(fid), None)
                    if entry is None:
                        self.unknown.append(fid)
                        continue
                    self.done[int(fid)] = (ok, err, bools)
                entry[1].set()

    def wait(self, fid, timeout=30):
        with self.lock:
            entry = self.pending.get(fid)
        if entry is not None and not entry[1].wait(timeout):
            raise AssertionError("batch %d did not complete in %ss" % (fid, timeout))
        with self.lock:
            return self.done.pop(fid)

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.native.close()


def lmcache_key(chunk, rank=0, model="org/model-7b"):
    """native_connector_l2_adapter._object_key_to_string of an ObjectKey."""
    return "%s@%08x@%x@%s" % (model, rank, 0, hashlib.sha256(b"%d" % chunk).hexdigest())


def chunk_buffers(n, size, fill=None):
    """LMCache's MemoryObj.byte_array: ctypes-backed byte memoryviews."""
    bufs = []
    for i in range(n):
        arr = (ctypes.c_ubyte * size)()
        if fill is not None:
            ctypes.memmove(arr, bytes((fill * 31 + i * 7 + j) & 0xFF for j in range(size)), size)
        bufs.append(memoryview(arr).cast("B"))
    return bufs


class LMCacheNativePluginTest(ClusterTest):
    def plugin(self, **params):
        params.setdefault("socket", self.socket)
        params.setdefault("key_prefix", self.key() + "/")
        native = load_native_plugin({"type": "native_plugin",
                                     "module_path": "fluxon.integrations.lmcache",
                                     "class_name": "FluxonNativeClient",
                                     "adapter_params": params})
        demux = Demux(native)
        self.addCleanup(demux.close)
        return demux

    def test_store_lookup_load_delete(self):
        d = self.plugin()
        size = 4096
        a_keys = [lmcache_key(i) for i in range(8)]
        b_keys = [lmcache_key(100 + i, rank=1) for i in range(4)]
        a_bufs, b_bufs = chunk_buffers(8, size, 1), chunk_buffers(4, size, 2)
        fa = d.submit("set", a_keys, a_bufs)
        fb = d.submit("set", b_keys, b_bufs)
        self.assertNotEqual(fa, fb)
        self.assertEqual(d.wait(fa), (True, "", None))
        self.assertEqual(d.wait(fb), (True, "", None))
        missing = lmcache_key(999)
        fe = d.submit("exists", a_keys[:3] + [missing] + b_keys)
        ok, err, found = d.wait(fe)
        self.assertTrue(ok)
        self.assertEqual(found, [True] * 3 + [False] + [True] * 4)
        # Load into fresh buffers: a miss and a buffer of the wrong size are False.
        dst = chunk_buffers(6, size)
        dst[4] = chunk_buffers(1, size + 1)[0]
        fg = d.submit("get", a_keys[:3] + [missing] + [a_keys[3], b_keys[0]], dst)
        ok, err, loaded = d.wait(fg)
        self.assertTrue(ok)
        self.assertEqual(loaded, [True, True, True, False, False, True])
        for i in range(3):
            self.assertEqual(bytes(dst[i]), bytes(a_bufs[i]), i)
        self.assertEqual(bytes(dst[5]), bytes(b_bufs[0]))
        self.assertEqual(bytes(dst[3]), bytes(size))  # the miss left its buffer alone
        fd = d.submit("delete", a_keys[:2] + [missing])
        self.assertEqual(d.wait(fd), (True, "", [True, True, False]))
        ok, err, found = d.wait(d.submit("exists", a_keys[:3]))
        self.assertEqual(found, [False, False, True])
        self.assertEqual(d.unknown, [])

    def test_batches_from_many_threads(self):
        d = self.plugin(num_workers=3)
        errors = []

        def controller(t):
            try:
                keys = [lmcache_key(1000 * t + i) for i in range(20)]
                bufs = chunk_buffers(20, 1024, t)
                if d.wait(d.submit("set", keys, bufs))[0] is not True:
                    errors.append("thread %d: store failed" % t)
                back = chunk_buffers(20, 1024)
                ok, _, loaded = d.wait(d.submit("get", keys, back))
                if not all(loaded) or [bytes(b) for b in back] != [bytes(b) for b in bufs]:
                    errors.append("thread %d: wrong load" % t)
            except Exception as e:  # reported below, with the thread
                errors.append("thread %d: %r" % (t, e))

        run_threads(controller, 6)
        self.assertEqual(errors, [])
        self.assertEqual(d.unknown, [])

    def test_eventfd_and_completion_contract(self):
        native = load_native_plugin({"module_path": "fluxon.integrations.lmcache",
                                     "class_name": "FluxonNativeClient",
                                     "adapter_params": {"socket": self.socket,
                                                        "key_prefix": self.key() + "/"}})
        self.addCleanup(native.close)
        fd = native.event_fd()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        self.assertEqual(poller.poll(0), [])  # nothing submitted: not readable
        self.assertEqual(native.drain_completions(), [])
        ids = [native.submit_batch_exists([lmcache_key(i)]) for i in range(5)]
        ids.append(native.submit_batch_exists([]))  # an empty batch completes too
        self.assertEqual(ids, sorted(set(ids)))
        self.assertTrue(all(isinstance(i, int) and i > 0 for i in ids))
        got, deadline = {}, time.monotonic() + 30
        while len(got) < len(ids) and time.monotonic() < deadline:
            if poller.poll(500):
                for fid, ok, err, bools in native.drain_completions():
                    got[fid] = (ok, err, bools)
        self.assertEqual(sorted(got), ids)
        self.assertEqual(got[ids[-1]], (True, "", []))
        self.assertEqual(got[ids[0]], (True, "", [False]))
        # The eventfd read and the pop are one step: no empty wakeup is left.
        self.assertEqual(native.drain_completions(), [])
        self.assertEqual(poller.poll(0), [])
        fid = native.submit_batch_set([], [])
        deadline = time.monotonic() + 30
        while not poller.poll(500) and time.monotonic() < deadline:
            pass
        self.assertEqual(native.drain_completions(), [(fid, True, "", None)])
        with self.assertRaises(ValueError):
            native.submit_batch_set([lmcache_key(1)], [])

    def test_failed_batches_and_close(self):
        own = fluxon.Client(self.socket)
        native = load_native_plugin({"module_path": "fluxon.integrations.lmcache",
                                     "class_name": "FluxonNativeClient",
                                     "adapter_params": {"client": own, "num_workers": 1}})
        d = Demux(native)
        try:
            fid = d.submit("set", [lmcache_key(1)], chunk_buffers(1, 64, 1))
            self.assertEqual(d.wait(fid), (True, "", None))
            own.close()  # the owner is gone for this client: the batch fails as a whole
            for op, args in (("get", ([lmcache_key(1)], chunk_buffers(1, 64))),
                             ("set", ([lmcache_key(2)], chunk_buffers(1, 64, 2))),
                             ("exists", ([lmcache_key(1)],)), ("delete", ([lmcache_key(1)],))):
                ok, err, bools = d.wait(d.submit(op, *args))
                self.assertFalse(ok, op)
                self.assertIn("closed", err, op)
                self.assertIsNone(bools, op)
        finally:
            d.close()
        d.native.close()  # idempotent
        with self.assertRaises(RuntimeError):
            native.submit_batch_exists([lmcache_key(1)])
        with self.assertRaises(OSError):
            os.fstat(d.fd)  # the eventfd is closed
        self.assertFalse([t for t in threading.enumerate() if t.name.startswith("fluxon-lmcache")])
        self.assertEqual(native.drain_completions(), [])

    def test_close_keeps_finished_batches_for_a_last_drain(self):
        native = load_native_plugin({"module_path": "fluxon.integrations.lmcache",
                                     "class_name": "FluxonNativeClient",
                                     "adapter_params": {"socket": self.socket, "num_workers": 2,
                                                        "key_prefix": self.key() + "/"}})
        ids = [native.submit_batch_exists([lmcache_key(i)]) for i in range(8)]
        native.close()  # waits for the accepted batches
        self.assertEqual(native.event_fd(), -1)
        got = native.drain_completions()
        self.assertEqual(sorted(fid for fid, _, _, _ in got), ids)
        self.assertTrue(all(ok and bools == [False] for _, ok, _, bools in got), got)
        self.assertEqual(native.drain_completions(), [])


if __name__ == "__main__":
    unittest.main()
