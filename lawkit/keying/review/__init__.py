"""`lawkit review`, from git objects alone: `verify` runs it, `gitobjects` reads the objects,
`lawchange` classifies one law file's change, `textchange` checks the text of a re-key, and
`formats` prints a report as text, GitHub annotations or Markdown.

May import what `lawkit.keying` may.
"""
