"""`python -m emu` runs the preemu command line."""
import sys

from .cli import main

sys.exit(main())
