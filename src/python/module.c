/*
 * module.c - `fluxon._native`, the C part of the `fluxon` Python package
 * (python/fluxon/__init__.py re-exports it): its types, exceptions and
 * constants.
 *
 * import fluxon; c = fluxon.Client(socket); c.put(key, buf);
 * h = c.get(key) -> MemHolder (zero-copy, buffer protocol, DLPack).
 * The module is a thin layer over libfluxon's public API; it links
 * libfluxon.so and includes nothing else of the project.
 */
#include "fxpy.h"

static struct PyModuleDef fluxon_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "fluxon._native",
    .m_doc = PyDoc_STR("Fluxon KV client: Client(socket).put / get / delete / batch_put / "
                       "batch_get /\nbatch_exists / prefix_hits; get returns a MemHolder, a "
                       "zero-copy read-only\nview of the value in shared memory (buffer "
                       "protocol and DLPack). Errors\nderive from fluxon.Error."),
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__native(void)
{
    if (PyType_Ready(&fxpy_client_type) < 0 || PyType_Ready(&fxpy_holder_type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&fluxon_module);
    if (!m)
        return NULL;
    if (fxpy_errors_init(m) < 0)
        goto fail;
    Py_INCREF(&fxpy_client_type);
    if (PyModule_AddObject(m, "Client", (PyObject *)&fxpy_client_type) < 0) {
        Py_DECREF(&fxpy_client_type);
        goto fail;
    }
    Py_INCREF(&fxpy_holder_type);
    if (PyModule_AddObject(m, "MemHolder", (PyObject *)&fxpy_holder_type) < 0) {
        Py_DECREF(&fxpy_holder_type);
        goto fail;
    }
    if (PyModule_AddIntConstant(m, "BATCH_MAX", FX_BATCH_MAX) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
