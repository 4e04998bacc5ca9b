"""What runs inside the engine's own processes while `lawkit footprint record` measures them: the
markers, the start-up hook, the recorders (``sys.monitoring`` on 3.12+, coverage.py on 3.11),
the patches and the SIGTERM watch. It records; hashing, metadata lookups and normal forms are
done by ``record``'s own process afterwards, from what this package wrote.

The room's rules, held by tests/footprint/test_measured_room.py:

- **The standard library only.** Modules here import the standard library and each other, never
  another part of lawkit (coverage.py only in the 3.11 recorder, which is how it measures): the
  engine's imports are what is measured, and ours must not be among them.
- **Nothing imported after start-up.** Every module a recorded process needs is imported by the
  start-up hook before the engine's first line; an import inside a callback, a patch or a marker
  would run in the engine's steps and be counted there (or deadlock on the import lock).
- **Never raise into the engine.** A recorder's callback, a patch and the SIGTERM watch catch
  what they can cause and note it for ``record`` to refuse with; only a marker used out of place
  (`RegionError`, a phase not in ``PHASES``) raises, as its caller's mistake.
- **No ``id()``.** It raises the ``builtins.id`` audit event, a call of every audit hook in the
  process (ours among them) per use: an object's identity is ``object.__hash__``, a thread's its
  ident.
- **No module ``global``.** What the start-up hook, the SIGTERM watch and the markers keep lives
  on one process object made at install (`lawkit.footprint.measured.process`), which a test can
  build and drop.
"""
