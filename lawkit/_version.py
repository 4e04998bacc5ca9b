"""lawkit's version, in a module of its own below everything that names it.

`lawkit.__version__`, `lawkit --version` and the `lawkit:` of each fit entry read it from here,
so that no module inside lawkit imports the package's face (which re-exports the wings).
"""

__version__ = "0.1.0"
