"""The proof Job's runner: standard library only, shipped in the Job's code ConfigMap with the catalog modules it
imports and the node agent's API client (``run.py`` one pass, ``main.py`` the Job's entry point)."""
