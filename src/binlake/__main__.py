import sys

from binlake.cli.dispatch import main

sys.exit(main())
