"""The registry of mechanisms: every way a run gets stuck that the diagnosis can name, declared once.

names.py   the name of each mechanism (`M`), the only place those strings are written
table.py   one row per mechanism: its detector, its sentence, what it decides, what it rests on,
           in the one precedence order every later step reads

Detectors import `M` from here to say what they found; nothing outside this package writes a
mechanism's name as a string (tests/replay/test_registry.py holds the code to it).
"""
from .names import M  # noqa: F401
