"""The only package that sees the whole stack: load the config, plan once, build, export.

``__main__.py`` is these four steps; capabilities never import this package.
"""
