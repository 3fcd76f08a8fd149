"""Pure data and rules: pydantic models, settings, the flat-schema checker, the answer validator.

jsonschema registers, when first imported, a checker for every format its optional packages
provide, and one of them (``rfc3987-syntax``, for the ``iri`` formats) builds a grammar as it is
imported: about a second in every process. Flat schemas never use those formats
(``schemas.formats`` checks the four they allow), so that package is marked absent here, before any
module of ours imports jsonschema; jsonschema then leaves the two ``iri`` checkers out.
"""

import sys

if "rfc3987_syntax" not in sys.modules:  # None in sys.modules makes an import of it fail at once
    sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]
