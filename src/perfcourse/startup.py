"""Imported first by the course's own processes (the `perfcourse` command, grading workers, the tests).

nbformat validates notebooks with jsonschema, and jsonschema 4.26 imports `rfc3987_syntax` at
import time for one format checker ("iri"), which builds some 35 Earley parsers on the spot:
about 1.2 CPU-s in every process that reads a notebook (python-jsonschema/jsonschema#1428).
No notebook or nbgrader schema uses that format, so these processes tell Python the module is
absent; jsonschema then leaves the "iri" checker out. Student kernels never import this module.
"""
import sys

sys.modules.setdefault("rfc3987_syntax", None)  # `import rfc3987_syntax` now raises ImportError
