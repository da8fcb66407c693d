"""The offline preview: the real program under Pulumi mocks, no CLI, no cloud credentials.

It runs ``__main__.py`` exactly as ``pulumi preview`` would, records every resource registration
with its wire-format inputs (secrets masked), and writes what it saw to ``build/preview/<stack>/``
for a reviewer to read.
"""
