"""Fluxon KV client for Python.

``Client(socket)`` puts, gets and deletes values in a Fluxon cluster; ``get``
returns a ``MemHolder``, a zero-copy read-only view of the value in the
owner's shared memory (buffer protocol and DLPack). The batch calls
(``batch_exists``, ``prefix_hits``, ``batch_get_into``, ``batch_put_from``,
``batch_delete`` and their ``_ptrs`` forms) take many keys in one call.
Errors derive from ``fluxon.Error``.

The client itself is the C extension ``fluxon._native`` over libfluxon;
this package adds typed values on top of it: ``put_tensor`` /
``get_tensor`` (``fluxon.tensor``) and the adapters for inference engines in
``fluxon.integrations``.
"""
from ._native import *  # noqa: F401,F403 (Client, MemHolder, the errors, BATCH_MAX)
# Client: fluxon.tensor's subclass of _native.Client, with put_tensor / get_tensor.
from .tensor import (Client, TensorFormatError, batch_get_tensor,  # noqa: F401
                     batch_put_tensor, get_tensor, put_tensor)
