"""Small command-line helpers for operators (``python -m components.tools.<name>``)."""
