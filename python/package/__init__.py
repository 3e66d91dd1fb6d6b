"""skipprd from Python (the wheel's package; see docs/guide/python.md).

The extension is skippr/skippr.cpython-*.so (its init function is PyInit_skippr, so it imports as skippr.skippr);
this package exposes every name of it, so `import skippr` behaves as the module built into build/python does. The
classes and functions keep __module__ == "skippr". DuckDB's library is in skippr.libs/, beside this package, found
through the extension's RUNPATH ($ORIGIN/../skippr.libs).
"""
from . import skippr as _extension

globals().update({k: v for k, v in vars(_extension).items() if not (k.startswith("__") and k.endswith("__"))})
__doc__ = _extension.__doc__
__version__ = _extension.__version__
globals().pop("skippr", None)  # the submodule, which the import above bound here: dir(skippr) as the module's
del _extension
