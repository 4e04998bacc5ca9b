"""atom: a stand-in engine package for lawkit's example workspace (not a real engine)."""

__version__ = "0.0.0"
