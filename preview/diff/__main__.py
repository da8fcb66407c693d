"""``python -m preview.diff``: the review of a change (``make diff``); see ``preview.diff.review``."""

import sys

from preview.diff.review import main

sys.exit(main())
