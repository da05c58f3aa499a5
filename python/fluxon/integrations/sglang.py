"""fluxon.integrations.sglang - a SGLang HiCache storage backend over Fluxon KV.

SGLang's hierarchical cache (HiCache) keeps KV pages in GPU memory, then in a
host memory pool, then in a storage backend (L3). Its ``dynamic`` backend
loads a ``HiCacheStorage`` subclass named in ``--hicache-storage-backend-extra-config``
(sglang/srt/mem_cache/storage/backend_factory.py: ``backend_class(storage_config,
kwargs)``, then ``register_mem_pool_host(host_pool)``); with ``"interface_v1": 1``
the cache controller moves pages with ``batch_get_v1`` / ``batch_set_v1``
straight between the host pool's page buffers and the store, and asks
``batch_exists`` how many leading pages of a prefix are stored.

Each page is stored as the objects of its page buffers, as Mooncake's backend
does (mooncake_store.py): for an MHA pool (``page_first`` / ``page_first_direct``
/ ``page_head`` layouts) a K and a V object, ``<prefix><hash>_<rank>_k`` and
``..._v``; for an MLA pool one object ``<prefix><hash>_<rank>_k`` that every TP
rank shares. ``<rank>`` is ``<tp_rank>-<tp_size>`` for MHA, plus
``_pp<rank>-<size>`` and ``_cp<rank>-<size>`` under pipeline or attention
context parallelism. The copies go through ``batch_get_into_ptrs`` /
``batch_put_from_ptrs`` with the pool's addresses: one copy each way.

- ``batch_exists(keys)``: ``prefix_hits`` over the pages' objects, in pages.
- ``batch_set_v1``: ``batch_exists`` on the objects, then puts only the missing
  ones (with reject_if_exists: one that another rank stored meanwhile counts
  as stored); True per page whose objects are all stored.
- ``batch_get_v1``: True per page whose objects were all read at their full
  size (a shorter value would leave part of the page stale).
- ``clear()``: deletes the objects this backend stored (Fluxon has no delete by
  prefix; every rank clears its own). ``close()`` closes the client it opened.

A failure of a whole batch (a lost owner) is logged and reported as False for
its pages: an exception would end SGLang's prefetch or backup thread for good.
Without ``interface_v1`` SGLang uses the older ``batch_get`` / ``batch_set`` of
flat data pages; they work too, one object per page ``<prefix><hash>_<rank>``.

Extra config (besides SGLang's ``backend_name``, ``module_path``, ``class_name``,
``interface_v1``): ``socket`` (the owner's client socket; default
$FLUXON_SOCKET) and ``key_prefix`` (default ``"sglang/"``, then the model
name and ``/``). Not supported: ``layer_first`` host pools (several buffers per
page) and heterogeneous-TP head splitting (``tp_lcm_size``).

When SGLang is importable the class derives from its ``HiCacheStorage`` (the
factory checks ``issubclass``); otherwise from a local stand-in with the same
method names and signatures, and the config dataclasses likewise.
"""
import logging
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, List, Optional

import fluxon

try:  # the real interface when SGLang is installed
    from sglang.srt.mem_cache.hicache_storage import (HiCacheStorage, HiCacheStorageConfig,
                                                      HiCacheStorageExtraInfo)
except ImportError:  # a stand-in with SGLang's names and signatures
    @dataclass
    class HiCacheStorageConfig:
        tp_rank: int
        tp_size: int
        pp_rank: int
        pp_size: int
        attn_cp_rank: int
        attn_cp_size: int
        is_mla_model: bool
        enable_storage_metrics: bool
        is_page_first_layout: bool
        model_name: Optional[str]
        dp_rank: int = 0
        dp_size: int = 1
        tp_lcm_size: Optional[int] = None
        should_split_heads: bool = False
        extra_config: Optional[dict] = None

    @dataclass
    class HiCacheStorageExtraInfo:
        prefix_keys: Optional[List[str]] = None
        extra_info: Optional[dict] = None

    class HiCacheStorage(ABC):
        def register_mem_pool_host(self, mem_pool_host):
            self.mem_pool_host = mem_pool_host

        def batch_get_v1(self, keys, host_indices, extra_info=None) -> List[bool]:
            raise NotImplementedError()

        def batch_set_v1(self, keys, host_indices, extra_info=None) -> List[bool]:
            raise NotImplementedError()

        @abstractmethod
        def get(self, key, target_location=None, target_sizes=None):
            pass

        @abstractmethod
        def batch_get(self, keys, target_locations=None, target_sizes=None):
            pass

        @abstractmethod
        def set(self, key, value=None, target_location=None, target_sizes=None) -> bool:
            pass

        @abstractmethod
        def batch_set(self, keys, values=None, target_locations=None,
                      target_sizes=None) -> bool:
            pass

        @abstractmethod
        def exists(self, key) -> bool:
            pass

        def batch_exists(self, keys, extra_info=None) -> int:
            for i, k in enumerate(keys):
                if not self.exists(k):
                    return i
            return len(keys)

        def clear(self) -> None:
            pass

        def get_stats(self):
            return None

__all__ = ["FluxonHiCacheStorage", "HiCacheStorage", "HiCacheStorageConfig",
           "HiCacheStorageExtraInfo"]

logger = logging.getLogger(__name__)

_ALREADY_EXISTS = -8  # FX_EEXIST
# Host pool layouts whose get_page_buffer_meta gives one buffer per K / V of a page.
_PAGE_LAYOUTS = ("page_first", "page_first_direct", "page_head")


def _rank_suffix(cfg):
    """The rank part of a key: pages differ per TP rank for MHA (each holds its
    heads), are shared for MLA; PP and attention-CP ranks hold disjoint pages."""
    if cfg is None:
        return "_0-1"
    parts = [] if cfg.is_mla_model else ["%d-%d" % (cfg.tp_rank, cfg.tp_size)]
    if cfg.pp_size > 1:
        parts.append("pp%d-%d" % (cfg.pp_rank, cfg.pp_size))
    if getattr(cfg, "attn_cp_size", 1) > 1:
        parts.append("cp%d-%d" % (cfg.attn_cp_rank, cfg.attn_cp_size))
    return "".join("_" + p for p in parts)


class FluxonHiCacheStorage(HiCacheStorage):
    """A HiCache L3 backend on a Fluxon cluster (see the module docstring)."""

    def __init__(self, storage_config: HiCacheStorageConfig = None, kwargs: Any = None, *,
                 client: Optional[fluxon.Client] = None):
        extra = dict(getattr(storage_config, "extra_config", None) or {})
        if getattr(storage_config, "should_split_heads", False):
            raise ValueError("FluxonHiCacheStorage: heterogeneous TP (tp_lcm_size) is not "
                             "supported")
        self.storage_config = storage_config
        self.mem_pool_host = None
        self._own_client = client is None
        self.client = client if client is not None else fluxon.Client(extra.get("socket"))
        model = getattr(storage_config, "model_name", None) or ""
        self._prefix = str(extra.get("key_prefix", "sglang/"))
        if model:
            self._prefix += model.replace("/", "-") + "/"
        self._rank = _rank_suffix(storage_config)
        # Which objects a page is: with interface_v1 the pool's K (and V) page
        # buffers, else one flat data page (the controller uses one or the other).
        self._v1 = bool(extra.get("interface_v1", 0))
        mla = bool(getattr(storage_config, "is_mla_model", False))
        self._parts = (["_k"] if mla else ["_k", "_v"]) if self._v1 else [""]
        # Keys this backend stored, for clear() (guarded by _lock: SGLang's
        # prefetch and backup threads call in concurrently). A key found absent
        # again (evicted) leaves it at its next backup, so it holds about what
        # the cluster keeps of this backend's, not every key ever stored.
        self._lock = threading.Lock()
        self._stored = set()

    # ---- SGLang's calls ------------------------------------------------------------

    def register_mem_pool_host(self, mem_pool_host):
        super().register_mem_pool_host(mem_pool_host)
        layout = getattr(mem_pool_host, "layout", None)
        if self._v1 and layout not in _PAGE_LAYOUTS:
            raise ValueError("FluxonHiCacheStorage: host pool layout %r has several buffers "
                             "per page; use --hicache-mem-layout page_first or "
                             "page_first_direct" % (layout,))

    def batch_exists(self, keys: List[str],
                     extra_info: Optional[HiCacheStorageExtraInfo] = None) -> int:
        """How many pages, from keys[0] on, are stored (all their objects)."""
        try:
            return self.client.prefix_hits(self._objects(keys)) // len(self._parts)
        except fluxon.Error as e:
            logger.warning("fluxon batch_exists of %d pages failed: %s", len(keys), e)
            return 0

    def exists(self, key: str) -> bool:
        return self.batch_exists([key]) == 1

    def batch_set_v1(self, keys: List[str], host_indices: Any,
                     extra_info: Optional[HiCacheStorageExtraInfo] = None) -> List[bool]:
        objs, ptrs, sizes = self._page_buffers(keys, host_indices)
        return self._per_page(len(keys), self._put_missing(objs, ptrs, sizes))

    def batch_get_v1(self, keys: List[str], host_indices: Any,
                     extra_info: Optional[HiCacheStorageExtraInfo] = None) -> List[bool]:
        objs, ptrs, sizes = self._page_buffers(keys, host_indices)
        try:
            got = self.client.batch_get_into_ptrs(objs, ptrs, sizes)
        except fluxon.Error as e:
            logger.warning("fluxon batch_get_v1 of %d pages failed: %s", len(keys), e)
            return [False] * len(keys)
        return self._per_page(len(keys), [n == s for n, s in zip(got, sizes)])

    # ---- the older interface: flat data pages (tensors) or raw addresses ----------------

    def batch_set(self, keys: List[str], values: Optional[Any] = None,
                  target_locations: Optional[Any] = None,
                  target_sizes: Optional[Any] = None) -> bool:
        objs = [self._prefix + k + self._rank for k in keys]
        if values is not None:
            return all(self._put_missing(objs, list(values), None))
        if target_locations is None or target_sizes is None:
            raise ValueError("batch_set needs values, or target_locations and target_sizes")
        return all(self._put_missing(objs, list(target_locations), list(target_sizes)))

    def set(self, key: str, value: Optional[Any] = None, target_location: Optional[Any] = None,
            target_sizes: Optional[Any] = None) -> bool:
        if value is not None:
            return self.batch_set([key], [value])
        return self.batch_set([key], None, [target_location], [target_sizes])

    def batch_get(self, keys: List[str], target_locations: Optional[Any] = None,
                  target_sizes: Optional[Any] = None):
        """With target_sizes (raw addresses): how many pages from the first were
        read. Else target_locations are CPU tensors (or buffers) to fill: each
        one back, or None where the key was not read in full."""
        if target_locations is None:
            raise ValueError("FluxonHiCacheStorage.batch_get needs target_locations")
        objs = [self._prefix + k + self._rank for k in keys]
        try:
            if target_sizes is not None:
                got = self.client.batch_get_into_ptrs(objs, list(target_locations),
                                                      list(target_sizes))
                ok = [n == s for n, s in zip(got, target_sizes)]
                return ok.index(False) if False in ok else len(ok)
            got = self.client.batch_get_into(objs, list(target_locations))
        except fluxon.Error as e:
            logger.warning("fluxon batch_get of %d pages failed: %s", len(keys), e)
            return 0 if target_sizes is not None else [None] * len(keys)
        return [t if n == _nbytes(t) else None for n, t in zip(got, target_locations)]

    def get(self, key: str, target_location: Optional[Any] = None,
            target_sizes: Optional[Any] = None):
        if target_sizes is not None:
            return self.batch_get([key], [target_location], [target_sizes]) == 1
        return self.batch_get([key], [target_location])[0]

    def clear(self) -> None:
        with self._lock:
            stored, self._stored = list(self._stored), set()
        try:
            self.client.batch_delete(stored)
        except fluxon.Error as e:
            logger.warning("fluxon clear of %d objects failed: %s", len(stored), e)

    def close(self):
        if self._own_client:
            self.client.close()

    # ---- inside -------------------------------------------------------------------------

    def _objects(self, keys):
        """Every page's object keys, page after page, in get_page_buffer_meta order."""
        return [self._prefix + k + self._rank + p for k in keys for p in self._parts]

    def _page_buffers(self, keys, host_indices):
        ptrs, sizes = self.mem_pool_host.get_page_buffer_meta(host_indices)
        if isinstance(sizes, int):
            sizes = [sizes] * len(ptrs)
        objs = self._objects(keys)
        if len(ptrs) != len(objs) or len(sizes) != len(objs):
            raise ValueError("FluxonHiCacheStorage: the host pool gives %d buffers for %d "
                             "pages, %d expected (%d per page)"
                             % (len(ptrs), len(keys), len(objs), len(self._parts)))
        return objs, list(ptrs), list(sizes)

    def _put_missing(self, objs, bufs, sizes):
        """Stores bufs[i] (addresses of sizes[i] bytes when sizes is given, else
        buffers or CPU tensors) under objs[i] where objs[i] is absent: True per
        object now stored."""
        try:
            present = self.client.batch_exists(objs)
            todo = [i for i, p in enumerate(present) if not p]
            codes = [0] * len(objs)
            with self._lock:
                self._stored.difference_update(objs[i] for i in todo)
            if todo:
                keys = [objs[i] for i in todo]
                if sizes is None:
                    put = self.client.batch_put_from(keys, [bufs[i] for i in todo],
                                                     reject_if_exists=True)
                else:
                    put = self.client.batch_put_from_ptrs(keys, [bufs[i] for i in todo],
                                                          [sizes[i] for i in todo],
                                                          reject_if_exists=True)
                for i, rc in zip(todo, put):
                    codes[i] = 0 if rc == _ALREADY_EXISTS else rc
                with self._lock:
                    self._stored.update(k for k, rc in zip(keys, put) if rc == 0)
        except fluxon.Error as e:
            logger.warning("fluxon put of %d objects failed: %s", len(objs), e)
            return [False] * len(objs)
        return [rc == 0 for rc in codes]

    def _per_page(self, pages, ok):
        m = len(ok) // pages if pages else 1
        return [all(ok[i * m:(i + 1) * m]) for i in range(pages)]


def _nbytes(t):
    """The size of a page buffer: a CPU tensor (torch 1.13 has no .nbytes) or a buffer."""
    if hasattr(t, "element_size") and hasattr(t, "numel"):
        return t.element_size() * t.numel()
    return memoryview(t).nbytes
