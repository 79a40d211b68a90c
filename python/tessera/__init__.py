"""Python bindings of Tessera.

``tessera.runtime`` loads compiled artifacts through the runtime's C API
(libtessera_runtime.so) and calls them on NumPy arrays; ``tessera.plot``
(``python -m tessera.plot``) draws the loss curves of training logs as SVG.
"""
