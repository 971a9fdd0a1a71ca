"""Allow ``python -m sinkbench``."""

import sys

from sinkbench.cli import main

sys.exit(main())
