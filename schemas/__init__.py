"""Pure data and rules: pydantic models, settings, the flat-schema checker, the answer validator.

jsonschema registers, when first imported, a checker for every format its optional packages
provide (``jsonschema[format-nongpl]`` installs them all), and two of them are slow to import:
``rfc3987-syntax`` (the ``iri`` formats) builds a grammar, about a second, and ``isoduration``
(``duration``) pulls in ``arrow``. Flat schemas allow neither format (``schemas.formats`` checks the
four they do allow), so both packages are marked absent here, before any module of ours imports
jsonschema; jsonschema then leaves those checkers out. Nothing else of humangate uses them.
"""

import sys

UNUSED_FORMAT_PACKAGES = ("rfc3987_syntax", "isoduration")
"""Packages jsonschema imports for formats flat schemas never allow; marked absent in every process."""

for _name in UNUSED_FORMAT_PACKAGES:
    if _name not in sys.modules:  # None in sys.modules makes an import of it fail at once
        sys.modules[_name] = None  # type: ignore[assignment]
