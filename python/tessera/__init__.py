"""Python bindings of Tessera.

``tessera.runtime`` loads compiled artifacts through the runtime's C API
(libtessera_runtime.so) and calls them on NumPy arrays.
"""
