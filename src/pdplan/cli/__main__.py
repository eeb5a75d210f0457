"""`python -m pdplan.cli`."""

import sys

from pdplan.cli import main

sys.exit(main())
