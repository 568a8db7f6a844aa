"""Repository tools that are not part of the distribution: the docs' generated pages and the MkDocs hook."""
