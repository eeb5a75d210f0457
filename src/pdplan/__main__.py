"""`python -m pdplan`."""

import sys

from pdplan.cli import main

sys.exit(main())
