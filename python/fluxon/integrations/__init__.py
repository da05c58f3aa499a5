"""fluxon.integrations - Fluxon KV as the external KV cache of inference engines.

- ``fluxon.integrations.sglang.FluxonHiCacheStorage``: a SGLang HiCache storage
  backend (L3), loaded by SGLang's ``dynamic`` backend.
- ``fluxon.integrations.lmcache.FluxonNativeClient``: an LMCache ``native_plugin``
  L2 client (eventfd + submitted batches + drained completions).

Both run on the batch calls of ``fluxon.Client`` and import neither framework
at module import; docs/integrations.md names the framework files and versions
each contract comes from, and how to enable them.
"""
