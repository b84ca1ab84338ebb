"""`python -m neurobrix` is the `neurobrix` command (handy when running from a source checkout)."""

import sys

from .cli import main

sys.exit(main())
